/**
 * Worker thread behind `applyInSlices` and `checkAndSlice`: reads, checks and cuts big updates so
 * the main thread never decodes a whole snapshot or a client's big update in one go. It runs at
 * the lowest priority (Linux nice 19), so on a busy core it takes only the time the rooms leave.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import * as Y from 'yjs'
import { PendingLimitError } from '../errors.js'
import { type ClockRanges, rangesOf } from '../protocol/held-content.js'
import { checkReservedWrites, type ServerParts } from '../protocol/reserved-writes.js'
import { checkWhole } from '../protocol/update-guard.js'
import { scanUpdate } from '../protocol/update-scan.js'
import { sliceUpdate } from '../protocol/update-slices.js'

export interface SliceRequest {
  id: number
  update: Uint8Array
  structsPerSlice: number
  /** A client's update: check it integrates whole against the room's state vector before cutting it. */
  check?: { stateVector: Uint8Array }
  /** A loaded state: also encode the document it builds, as a joiner would be sent it. */
  encode?: boolean
}
/** The document's own encoding: `same` when it is byte for byte the update itself (no transfer). */
export type Encoded = Uint8Array | 'same'
/** What the check found of a client's update, beside its slices: what the room checks against its content. */
export interface Checked {
  ranges: ClockRanges
  sliceRanges: ClockRanges[]
  server: ServerParts
}
export type SliceReply =
  | { id: number; slices: Uint8Array[]; encoded?: Encoded; checked?: Checked }
  | { id: number; refused: { pending: boolean; message: string } }

try {
  // A thread's own id is only readable on Linux; elsewhere it just runs at normal priority.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19)
} catch {}

parentPort?.on('message', ({ id, update, structsPerSlice, check, encode }: SliceRequest) => {
  let checked: Omit<Checked, 'sliceRanges'> | undefined
  if (check) {
    try {
      const reached = Y.decodeStateVector(check.stateVector)
      const scanned = scanUpdate(update)
      checkWhole(scanned, (client) => reached.get(client) ?? 0)
      checked = { server: checkReservedWrites(scanned), ranges: rangesOf(scanned) }
    } catch (error) {
      const refused = { pending: error instanceof PendingLimitError, message: (error as Error).message }
      parentPort?.postMessage({ id, refused } satisfies SliceReply)
      return
    }
  }
  let slices: Uint8Array[]
  try {
    slices = sliceUpdate(update, structsPerSlice)
  } catch {
    slices = [update] // cannot be decoded: left whole, so applying it fails as it always did
  }
  const encoded = encode ? encodedDocument(update) : undefined
  const transfer = [...slices, ...(encoded instanceof Uint8Array ? [encoded] : [])]
  // Checked, it integrates whole with no gap: each slice is read as the update was.
  const sliceRanges = checked && slices.map((slice) => rangesOf(scanUpdate(slice)))
  parentPort?.postMessage(
    {
      id,
      slices,
      ...(encoded ? { encoded } : {}),
      ...(checked && sliceRanges ? { checked: { ...checked, sliceRanges } } : {}),
    } satisfies SliceReply,
    transfer.map((bytes) => bytes.buffer as ArrayBuffer),
  )
})

/**
 * What a joiner is sent for a loaded state: the garbage-collected encoding of the document it
 * builds. Done here, so the main thread does not encode a big document at the first join (tens
 * of milliseconds for 1.5 MB, while every room waits). Usually the snapshot is exactly that.
 */
function encodedDocument(update: Uint8Array): Encoded | undefined {
  try {
    const doc = new Y.Doc()
    Y.applyUpdate(doc, update)
    const encoded = Y.encodeStateAsUpdate(doc)
    doc.destroy()
    return Buffer.compare(encoded, update) === 0 ? 'same' : encoded
  } catch {
    return undefined // the main thread's own encoding will do
  }
}
