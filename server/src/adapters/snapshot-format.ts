import type { StoredSnapshot } from '../ports/snapshot-store.js'

/**
 * How the file and S3 stores keep a snapshot's incarnation and tombstone in the stored bytes
 * themselves, so one write replaces all of it at once. The bytes of an incarnation after the
 * first, or of a tombstone, start with a header; bytes without one are incarnation 0 (all that
 * earlier versions stored). So no two incarnations, and no tombstone and snapshot, ever store the
 * same bytes: S3's version tag (an MD5 of the bytes) can never match across a deletion.
 *
 * Header: 5 magic bytes, 1 flag byte (1: tombstone), the generation as u32 LE; with the second
 * magic, then the epoch of the owner that saved it (u64 LE; none: 0, and the first header). The
 * magic reads as a Yjs update claiming billions of clients, which no real update does, so it never
 * starts one. The epoch is in the bytes too, so two owners never store the same bytes.
 */
const MAGIC = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f])
const MAGIC_WITH_EPOCH = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7e])
const HEADER_BYTES = MAGIC.length + 1 + 4
const HEADER_WITH_EPOCH_BYTES = HEADER_BYTES + 8
const DELETED = 1

export interface SnapshotFileContents {
  state: Uint8Array
  generation: number
  deleted: boolean
  /** The epoch of the room's owner that saved it; 0 when saved without one. */
  epoch?: number
}

/** The bytes to write for `contents`: the bare state for incarnation 0, as earlier versions wrote. */
export function encodeSnapshotFile({
  state,
  generation,
  deleted,
  epoch = 0,
}: SnapshotFileContents): Uint8Array {
  if (generation === 0 && !deleted && epoch === 0) return state
  const headerBytes = epoch === 0 ? HEADER_BYTES : HEADER_WITH_EPOCH_BYTES
  const bytes = Buffer.alloc(headerBytes + state.length)
  ;(epoch === 0 ? MAGIC : MAGIC_WITH_EPOCH).copy(bytes, 0)
  bytes.writeUInt8(deleted ? DELETED : 0, MAGIC.length)
  bytes.writeUInt32LE(generation, MAGIC.length + 1)
  if (epoch !== 0) bytes.writeBigUInt64LE(BigInt(epoch), HEADER_BYTES)
  bytes.set(state, headerBytes)
  return bytes
}

/** Reads what `encodeSnapshotFile` wrote (or a file of an earlier version). */
export function decodeSnapshotFile(bytes: Uint8Array): Required<SnapshotFileContents> {
  const head = decodeSnapshotFileHeader(bytes)
  const state = head.headerBytes === 0 ? bytes : bytes.subarray(head.headerBytes)
  return { state, generation: head.generation, deleted: head.deleted, epoch: head.epoch }
}

/** The incarnation, tombstone flag and epoch from a file's first `SNAPSHOT_FILE_HEADER_BYTES` (or fewer). */
export function decodeSnapshotFileHeader(bytes: Uint8Array): {
  generation: number
  deleted: boolean
  epoch: number
  headerBytes: number
} {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const magic = buffer.subarray(0, MAGIC.length)
  const withEpoch = buffer.length >= HEADER_WITH_EPOCH_BYTES && magic.equals(MAGIC_WITH_EPOCH)
  if (!withEpoch && (buffer.length < HEADER_BYTES || !magic.equals(MAGIC))) {
    return { generation: 0, deleted: false, epoch: 0, headerBytes: 0 }
  }
  return {
    generation: buffer.readUInt32LE(MAGIC.length + 1),
    deleted: buffer.readUInt8(MAGIC.length) === DELETED,
    epoch: withEpoch ? Number(buffer.readBigUInt64LE(HEADER_BYTES)) : 0,
    headerBytes: withEpoch ? HEADER_WITH_EPOCH_BYTES : HEADER_BYTES,
  }
}

/** The most a header takes: what `head` reads of a file. */
export const SNAPSHOT_FILE_HEADER_BYTES = HEADER_WITH_EPOCH_BYTES
/** The size of a tombstone's file: a bare header (tombstones carry no epoch). */
export const TOMBSTONE_FILE_BYTES = HEADER_BYTES

/** What `load` returns for decoded `contents` stored at `version` (flags only where set). */
export function storedSnapshotOf(
  { state, generation, deleted, epoch }: Required<SnapshotFileContents>,
  version: string,
): StoredSnapshot {
  return {
    state,
    version,
    generation,
    ...(deleted ? { deleted: true } : {}),
    ...(epoch > 0 ? { epoch } : {}),
  }
}
