/**
 * Worker thread behind `applyInSlices` and `checkAndSlice`: reads, checks and cuts big updates so
 * the main thread never decodes a whole snapshot or a client's big update in one go. It runs at
 * the lowest priority (Linux nice 19), so on a busy core it takes only the time the rooms leave.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import * as Y from 'yjs'
import { SymphonyError } from '../errors.js'
import { documentToJson } from '../protocol/document-json.js'
import { newDoc } from '../protocol/new-doc.js'
import type { ContentCost } from '../protocol/update-scan.js'
import { type CutUpdate, checkAndCut, sliceUpdate } from '../protocol/update-slices.js'

export interface SliceRequest {
  id: number
  update: Uint8Array
  structsPerSlice: number
  /**
   * A client's update: check it integrates whole against the room's state vector, adding at most
   * `maxStructs` structs to the room, before cutting it.
   */
  check?: { stateVector: Uint8Array; maxStructs: number }
  /** A loaded state: also encode the document it builds, as a joiner would be sent it. */
  encode?: boolean
  /** A state to read as JSON (`documentToJson`, as JSON text), no slices. */
  json?: boolean
}
/** The document's own encoding: `same` when it is byte for byte the update itself (no transfer). */
export type Encoded = Uint8Array | 'same'
export type SliceReply =
  | ({
      id: number
      slices: Uint8Array[]
      encoded?: Encoded
      json?: string
      cost?: ContentCost
    } & Partial<Omit<CutUpdate, 'slices'>>)
  | { id: number; refused: Refusal }
/** Why a client's update was refused: the `code` of the error the check threw (`INTERNAL`: not the client's fault). */
export interface Refusal {
  code: string
  message: string
}

try {
  // A thread's own id is only readable on Linux; elsewhere it just runs at normal priority.
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19)
} catch {}

parentPort?.on('message', ({ id, update, structsPerSlice, check, encode, json }: SliceRequest) => {
  let reply: SliceReply
  if (json) {
    reply = { id, slices: [] }
    try {
      reply.json = JSON.stringify(documentToJson(update))
    } catch {} // cannot be read: no text, and the caller says so
  } else if (check) {
    try {
      reply = { id, ...checkAndCut(update, check.stateVector, check.maxStructs, structsPerSlice) }
    } catch (error) {
      const code = error instanceof SymphonyError ? error.code : 'INTERNAL'
      parentPort?.postMessage({
        id,
        refused: { code, message: (error as Error).message },
      } satisfies SliceReply)
      return
    }
  } else {
    try {
      reply = { id, ...sliceUpdate(update, structsPerSlice) }
    } catch {
      reply = { id, slices: [update] } // cannot be read: left whole, so applying it fails as it always did
    }
    const encoded = encode ? encodedDocument(update) : undefined
    if (encoded) reply.encoded = encoded
  }
  const transfer = [...reply.slices, ...(reply.encoded instanceof Uint8Array ? [reply.encoded] : [])]
  parentPort?.postMessage(
    reply,
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
    const doc = newDoc()
    Y.applyUpdate(doc, update)
    const encoded = Y.encodeStateAsUpdate(doc)
    doc.destroy()
    return Buffer.compare(encoded, update) === 0 ? 'same' : encoded
  } catch {
    return undefined // the main thread's own encoding will do
  }
}
