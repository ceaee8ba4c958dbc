/**
 * How the file and S3 stores keep a snapshot's incarnation and tombstone in the stored bytes
 * themselves, so one write replaces all of it at once. The bytes of an incarnation after the
 * first, or of a tombstone, start with a header; bytes without one are incarnation 0 (all that
 * earlier versions stored). So no two incarnations, and no tombstone and snapshot, ever store the
 * same bytes: S3's version tag (an MD5 of the bytes) can never match across a deletion.
 *
 * Header: 5 magic bytes, 1 flag byte (1: tombstone), the generation as u32 LE. The magic reads as
 * a Yjs update claiming billions of clients, which no real update does, so it never starts one.
 */
const MAGIC = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f])
const HEADER_BYTES = MAGIC.length + 1 + 4
const DELETED = 1

export interface SnapshotFileContents {
  state: Uint8Array
  generation: number
  deleted: boolean
}

/** The bytes to write for `contents`: the bare state for incarnation 0, as earlier versions wrote. */
export function encodeSnapshotFile({ state, generation, deleted }: SnapshotFileContents): Uint8Array {
  if (generation === 0 && !deleted) return state
  const bytes = Buffer.alloc(HEADER_BYTES + state.length)
  MAGIC.copy(bytes, 0)
  bytes.writeUInt8(deleted ? DELETED : 0, MAGIC.length)
  bytes.writeUInt32LE(generation, MAGIC.length + 1)
  bytes.set(state, HEADER_BYTES)
  return bytes
}

/** Reads what `encodeSnapshotFile` wrote (or a file of an earlier version). */
export function decodeSnapshotFile(bytes: Uint8Array): SnapshotFileContents {
  const head = decodeSnapshotFileHeader(bytes)
  const state = head.headerBytes === 0 ? bytes : bytes.subarray(head.headerBytes)
  return { state, generation: head.generation, deleted: head.deleted }
}

/** The incarnation and tombstone flag from a file's first `SNAPSHOT_FILE_HEADER_BYTES` (or fewer). */
export function decodeSnapshotFileHeader(bytes: Uint8Array): {
  generation: number
  deleted: boolean
  headerBytes: number
} {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buffer.length < HEADER_BYTES || !buffer.subarray(0, MAGIC.length).equals(MAGIC)) {
    return { generation: 0, deleted: false, headerBytes: 0 }
  }
  return {
    generation: buffer.readUInt32LE(MAGIC.length + 1),
    deleted: buffer.readUInt8(MAGIC.length) === DELETED,
    headerBytes: HEADER_BYTES,
  }
}

export const SNAPSHOT_FILE_HEADER_BYTES = HEADER_BYTES
