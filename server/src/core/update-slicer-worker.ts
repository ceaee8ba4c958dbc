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
import { checkWhole } from '../protocol/update-guard.js'
import { scanUpdate } from '../protocol/update-scan.js'
import { sliceUpdate } from '../protocol/update-slices.js'

export interface SliceRequest {
  id: number
  update: Uint8Array
  structsPerSlice: number
  /** A client's update: check it integrates whole against the room's state vector before cutting it. */
  check?: { stateVector: Uint8Array }
}
export type SliceReply =
  | { id: number; slices: Uint8Array[] }
  | { id: number; refused: { pending: boolean; message: string } }

try {
  // A thread's own id is only readable on Linux; elsewhere it just runs at normal priority.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19)
} catch {}

parentPort?.on('message', ({ id, update, structsPerSlice, check }: SliceRequest) => {
  if (check) {
    try {
      const reached = Y.decodeStateVector(check.stateVector)
      checkWhole(scanUpdate(update), (client) => reached.get(client) ?? 0)
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
  parentPort?.postMessage(
    { id, slices } satisfies SliceReply,
    slices.map((slice) => slice.buffer as ArrayBuffer),
  )
})
