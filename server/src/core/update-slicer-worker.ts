/**
 * Worker thread behind `applyInSlices`: cuts big updates into slices so the main thread never
 * decodes a whole snapshot in one go. It runs at the lowest priority (Linux nice 19), so on a
 * busy core it takes only the time the rooms leave over.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import { sliceUpdate } from '../protocol/update-slices.js'

export interface SliceRequest {
  id: number
  update: Uint8Array
  structsPerSlice: number
}
export interface SliceReply {
  id: number
  slices: Uint8Array[]
}

try {
  // A thread's own id is only readable on Linux; elsewhere it just runs at normal priority.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19)
} catch {}

parentPort?.on('message', ({ id, update, structsPerSlice }: SliceRequest) => {
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
