import { setImmediate as nextTurn } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import * as Y from 'yjs'
import { sliceUpdate } from '../protocol/update-slices.js'
import type { SliceReply, SliceRequest } from './update-slicer-worker.js'

/**
 * Run from TypeScript source (the tests, under tsx), a worker thread could not load its entry:
 * Node 20 does not hand tsx's loader on to workers. There the slicing runs on this thread.
 */
const FROM_SOURCE = import.meta.url.endsWith('.ts')
/** Below this a state applies in one go: slicing would cost more than the stall it saves. */
const SLICE_ABOVE_BYTES = 256 * 1024
/** About a millisecond of integration per slice on this project's bench machine. */
const STRUCTS_PER_SLICE = 250

/**
 * Applies a loaded state to `doc`. A big one (a cold load of a large snapshot) is cut into slices
 * by a worker thread and applied one slice per event-loop turn, so the other rooms' messages are
 * served in between instead of waiting out one long transaction. If the worker fails, the state
 * applies in one go, as a small one does.
 */
export async function applyInSlices(doc: Y.Doc, state: Uint8Array): Promise<void> {
  if (state.length < SLICE_ABOVE_BYTES) return Y.applyUpdate(doc, state)
  const slices = FROM_SOURCE
    ? sliceUpdate(state, STRUCTS_PER_SLICE)
    : await slicer.slice(state).catch(() => [state])
  await applyAcrossTurns(doc, slices, ONE_PER_TURN, (error) => {
    throw error
  })
}

/**
 * Applies journaled updates in order, a turn's worth at a time (a journal that grew while
 * snapshots failed can hold many thousands). One that does not apply is handed to `skipped` and
 * left out. Resolves with the bytes applied.
 */
export function replayInTurns(
  doc: Y.Doc,
  updates: Uint8Array[],
  skipped: (error: unknown) => void,
): Promise<number> {
  return applyAcrossTurns(doc, updates, JOURNAL_BYTES_PER_TURN, skipped)
}

/** Any slice fills a turn: a slice is already about a millisecond of work. */
const ONE_PER_TURN = 1
/** About a millisecond's worth of small updates. */
const JOURNAL_BYTES_PER_TURN = 8 * 1024

/** Applies `updates` in order, yielding to the event loop once `bytesPerTurn` have applied. */
async function applyAcrossTurns(
  doc: Y.Doc,
  updates: Uint8Array[],
  bytesPerTurn: number,
  failed: (error: unknown) => void,
): Promise<number> {
  let applied = 0
  let thisTurn = 0
  for (const update of updates) {
    if (thisTurn >= bytesPerTurn) {
      await nextTurn()
      thisTurn = 0
    }
    try {
      Y.applyUpdate(doc, update)
      applied += update.length
    } catch (error) {
      failed(error)
    }
    thisTurn += update.length
  }
  return applied
}

/** One worker for the process, started at the first big load; it keeps the process alive only while it has work. */
class Slicer {
  #worker: Worker | null = null
  #nextId = 0
  readonly #waiting = new Map<
    number,
    { resolve: (slices: Uint8Array[]) => void; reject: (e: Error) => void }
  >()

  slice(update: Uint8Array): Promise<Uint8Array[]> {
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject })
      const worker = this.#started()
      worker.ref() // only while it has work: an idle slicer must not keep the process alive
      worker.postMessage({ id, update, structsPerSlice: STRUCTS_PER_SLICE } satisfies SliceRequest)
    })
  }

  #started(): Worker {
    if (this.#worker) return this.#worker
    const entry = new URL('./update-slicer-worker.js', import.meta.url)
    const worker = new Worker(entry)
    worker.on('message', (reply: SliceReply) => {
      const waiter = this.#waiting.get(reply.id)
      this.#waiting.delete(reply.id)
      if (this.#waiting.size === 0) worker.unref()
      if ('error' in reply) waiter?.reject(new Error(reply.error))
      else waiter?.resolve(reply.slices)
    })
    const fail = (error: Error) => {
      this.#worker = null
      for (const waiter of this.#waiting.values()) waiter.reject(error)
      this.#waiting.clear()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`update slicer exited with code ${code}`)))
    this.#worker = worker
    return worker
  }
}

const slicer = new Slicer()
