import { setImmediate as nextTurn } from 'node:timers/promises'
import { Worker } from 'node:worker_threads'
import * as Y from 'yjs'
import { DocumentTooLargeError, PendingLimitError, ProtocolError, ServerBusyError } from '../errors.js'
import { documentToJson } from '../protocol/document-json.js'
import { type ContentCost, contentCostOf } from '../protocol/update-scan.js'
import { type CutUpdate, checkAndCut, sliceUpdate } from '../protocol/update-slices.js'
import { clientCount, holdsWaiting, waitingChanged, waitingOf } from '../protocol/yjs-internals.js'
import type { Encoded, Refusal, SliceReply, SliceRequest } from './update-slicer-worker.js'

/**
 * Run from TypeScript source (the tests, under tsx), the worker's entry is a .ts file that a
 * worker thread cannot load the way it loads the built .js. There the slicing runs on this thread.
 */
const FROM_SOURCE = import.meta.url.endsWith('.ts')
/** Below this a state applies in one go: slicing would cost more than the stall it saves. */
export const SLICE_ABOVE_BYTES = 256 * 1024
/** About a millisecond of integration per slice on this project's bench machine. */
const STRUCTS_PER_SLICE = 250
const SLICING_TIMEOUT_MS = 5_000
/**
 * An idle worker is stopped after this: what its last job left on its heap (a big update's scan,
 * a loaded document) would otherwise stay in the process's memory until it next runs.
 */
const WORKER_IDLE_MS = 1_000
/**
 * The worker's young generation, small: a big update's scan keeps an object per struct, and with
 * V8's default the worker's peak for an update of a million structs was 290 MB; with 8 MB, 150.
 */
const WORKER_YOUNG_GENERATION_MB = 8

/**
 * Applies a loaded state to `doc`. A big one (a cold load of a large snapshot) is cut into slices
 * by a worker thread and applied one slice per event-loop turn, so the other rooms' messages are
 * served in between instead of waiting out one long transaction; a state that cannot be sliced
 * applies in one go. If the worker fails or takes too long, rejects with `ServerBusyError` (the
 * load is refused, 1013, and its clients come back): slicing here instead stalled every room for
 * a second or more per room, which is when the server is busiest (the worker runs at nice 19).
 *
 * Each piece's cost (`contentCostOf`) is handed to `reserve` before it is applied (a load reserves
 * its document's memory as it goes; it throws to stop). Resolves with what the state's content
 * builds on the heap (counted a slice at a time) and, into an empty `doc`, the document's encoding
 * (what `Y.encodeStateAsUpdate` would give) when the worker made it; null otherwise.
 */
export async function applyInSlices(
  doc: Y.Doc,
  state: Uint8Array,
  { origin = null, reserve = NO_RESERVATION }: ApplyOptions = {},
): Promise<{ encoded: Uint8Array | null; builtBytes: number }> {
  if (state.length < SLICE_ABOVE_BYTES) {
    const cost = costOf(state, reserve)
    Y.applyUpdate(doc, state, origin)
    return { encoded: null, builtBytes: cost.builtBytes }
  }
  const encode = clientCount(doc) === 0 && !holdsWaiting(doc)
  // Its bytes, the least it costs, reserved before any work on it: a room that cannot fit is
  // refused without the worker's time and memory (issue 47's attack came back to a refused 20 MB
  // room a hundred times).
  reserve({ structs: 0, builtBytes: 0, bytes: state.length })
  const { slices, encoded, cost } = FROM_SOURCE ? sliceHere(state) : await sliceOnWorker(state, encode)
  // The rest of the whole state's cost, read by the slicer: a state that cannot fit is refused
  // before any of it is built (one it could not read costs what its slices do, one at a time).
  if (cost) reserve({ ...cost, bytes: 0 })
  let builtBytes = cost?.builtBytes ?? 0
  // A slice's bytes were reserved with the state's: only its content is left to reserve.
  const contentOf = (slice: Uint8Array) => costOf(slice, reserve, 0).builtBytes
  for (const [index, slice] of slices.entries()) {
    if (!cost) builtBytes += contentOf(slice)
    Y.applyUpdate(doc, slice, origin)
    if (holdsWaiting(doc)) {
      // Something waits for a missing dependency, and Yjs would re-merge it with every later
      // slice: apply the rest in one go instead (and leave the encoding to the main thread).
      const rest = slices.slice(index + 1)
      if (!cost) for (const slice of rest) builtBytes += contentOf(slice)
      if (rest.length > 0) Y.applyUpdate(doc, Y.mergeUpdates(rest), origin)
      return { encoded: null, builtBytes }
    }
    await nextTurn()
  }
  return { encoded: encoded === 'same' ? state : (encoded ?? null), builtBytes }
}

/** How a state or journal is applied. */
export interface ApplyOptions {
  /** The transaction origin of what is applied. */
  origin?: unknown
  /** Told what each piece costs before it is applied; throws to stop applying. */
  reserve?: (cost: PieceCost) => void
}

/** What a piece of a state adds to a document: its structs, bytes, and what its content builds. */
export type PieceCost = ContentCost & { bytes: number }

const NO_RESERVATION = () => {}

/** What `piece` costs, reserved; `bytes` counts its encoding unless reserved already. */
function costOf(piece: Uint8Array, reserve: (cost: PieceCost) => void, bytes = piece.length): PieceCost {
  const cost = { ...contentCostOf(piece), bytes }
  reserve(cost)
  return cost
}

/**
 * Merges `state` into a live document (a CRDT union, garbage collected like any change), a slice
 * per event-loop turn when it is big, each update it makes new handed to `forward`. Resolves with
 * whether anything changed, also what only waits for missing dependencies (Yjs emits no update for
 * it, and a save must not drop it), and what the new content builds (`contentCostOf`).
 */
export async function absorbState(
  doc: Y.Doc,
  state: Uint8Array,
  forward: (update: Uint8Array) => void,
): Promise<{ changed: boolean; builtBytes: number }> {
  const origin = Symbol('absorbed')
  const waitingBefore = waitingOf(doc)
  let changed = false
  let builtBytes = 0
  const onUpdate = (update: Uint8Array, from: unknown) => {
    if (from !== origin) return
    changed = true
    builtBytes += contentCostOf(update).builtBytes
    forward(update)
  }
  doc.on('update', onUpdate)
  try {
    await applyInSlices(doc, state, { origin })
  } finally {
    doc.off('update', onUpdate)
  }
  return { changed: changed || waitingChanged(doc, waitingBefore), builtBytes }
}

/**
 * Checks that a client's big update integrates whole against the room's state vector and adds at
 * most `maxStructs` structs to it (as the update guard's `checkWhole`), and cuts it into slices,
 * both on the worker thread: the main thread never reads the whole update. Rejects with
 * `ProtocolError`, `PendingLimitError` or `DocumentTooLargeError` as the check would throw, and
 * with `ServerBusyError` if the worker fails or takes too long (the client retries; doing the work
 * here would stall every room for as long as the worker would have taken).
 */
export async function checkAndSlice(
  update: Uint8Array,
  stateVector: Uint8Array,
  maxStructs: number,
): Promise<CutUpdate> {
  if (FROM_SOURCE) return checkAndCut(update, stateVector, maxStructs, STRUCTS_PER_SLICE)
  let reply: WorkerAnswer
  try {
    reply = await slicer.slice({ update, check: { stateVector, maxStructs } })
  } catch (error) {
    throw new ServerBusyError(`the server could not take a big update now: ${(error as Error).message}`)
  }
  if ('slices' in reply) return reply as CutUpdate
  throw refusalError(reply)
}

/** The error the worker's check threw, as this thread's own. */
function refusalError({ code, message }: Refusal): Error {
  switch (code) {
    case 'PENDING_LIMIT':
      return new PendingLimitError(message)
    case 'DOCUMENT_TOO_LARGE':
      return new DocumentTooLargeError(message)
    case 'PROTOCOL_ERROR':
      return new ProtocolError(message)
    default:
      return new Error(`the update slicer failed: ${message}`)
  }
}

/** The longest a document is read as JSON on its worker. */
const READ_TIMEOUT_MS = 30_000

/**
 * A state's document as JSON text (`documentToJson`), read when it is big on a worker thread of
 * its own, stopped once it answers: reading 300,000 map entries here stalled every room for a
 * second or two, and a worker kept for the next read held what this one built until V8 collected
 * it (three reads in a row peaked at 950 MiB). Rejects with `ServerBusyError` when the worker
 * fails or takes too long (reading it here would stall every room for as long), and with
 * `ProtocolError` for a state that cannot be read.
 */
export async function documentJsonText(state: Uint8Array): Promise<string> {
  if (FROM_SOURCE || state.length < SLICE_ABOVE_BYTES) return JSON.stringify(documentToJson(state))
  let reply: SliceReply
  const worker = startWorker()
  try {
    reply = await new Promise<SliceReply>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('reading timed out')), READ_TIMEOUT_MS)
      worker.once('message', (answer: SliceReply) => {
        clearTimeout(timer)
        resolve(answer)
      })
      worker.once('error', reject)
      worker.once('exit', (code) => reject(new Error(`the reader exited with code ${code}`)))
      worker.postMessage({
        id: 0,
        update: state,
        structsPerSlice: STRUCTS_PER_SLICE,
        json: true,
      } satisfies SliceRequest)
    })
  } catch (error) {
    throw new ServerBusyError(`the server could not read the document now: ${(error as Error).message}`)
  } finally {
    void worker.terminate()
  }
  if ('json' in reply && reply.json !== undefined) return reply.json
  throw new ProtocolError('a stored state that cannot be read')
}

/** A worker thread running `update-slicer-worker.ts`, with a small young generation (see `WORKER_YOUNG_GENERATION_MB`). */
function startWorker(): Worker {
  return new Worker(new URL('./update-slicer-worker.js', import.meta.url), {
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
  })
}

/** A request without a check is never refused: the worker answers with slices (and the encoding). */
async function sliceOnWorker(state: Uint8Array, encode: boolean): Promise<LoadedSlices> {
  let reply: WorkerAnswer
  try {
    reply = await slicer.slice({ update: state, encode })
  } catch (error) {
    throw new ServerBusyError(`the server could not load a big state now: ${(error as Error).message}`)
  }
  return 'slices' in reply ? reply : { slices: [state] }
}

/** What a loaded state was cut into: its slices, the document's encoding and the state's cost when known. */
interface LoadedSlices {
  slices: Uint8Array[]
  encoded?: Encoded | undefined
  cost?: ContentCost | undefined
}

/** Slices on this thread (tests run from source); a state that cannot be decoded is left whole, to fail as it would. */
function sliceHere(state: Uint8Array): LoadedSlices {
  try {
    return sliceUpdate(state, STRUCTS_PER_SLICE)
  } catch {
    return { slices: [state] }
  }
}

/** About a millisecond's worth of small updates. */
const JOURNAL_BYTES_PER_TURN = 8 * 1024

/**
 * Applies journaled updates in order, about `JOURNAL_BYTES_PER_TURN` per event-loop turn (a
 * journal that grew while snapshots failed can hold many thousands). One that does not apply is
 * handed to `skipped` and left out; each one's cost is handed to `reserve` first, as in
 * `applyInSlices`. Resolves with the bytes applied, and what their content builds on the heap.
 */
export async function replayInTurns(
  doc: Y.Doc,
  updates: Uint8Array[],
  { skipped, origin = null, reserve = NO_RESERVATION }: ApplyOptions & { skipped: (error: unknown) => void },
): Promise<{ bytes: number; builtBytes: number }> {
  let applied = 0
  let builtBytes = 0
  let thisTurn = 0
  for (const update of updates) {
    if (thisTurn >= JOURNAL_BYTES_PER_TURN) {
      await nextTurn()
      thisTurn = 0
    }
    const cost = costOf(update, reserve) // outside the try: a refused reservation stops the replay
    try {
      Y.applyUpdate(doc, update, origin)
      applied += update.length
      builtBytes += cost.builtBytes
    } catch (error) {
      skipped(error)
    }
    thisTurn += update.length
  }
  return { bytes: applied, builtBytes }
}

/** What the worker answers a request with: its slices (and what else was asked), or why it was refused. */
type WorkerAnswer =
  | {
      slices: Uint8Array[]
      structs?: number
      encoded?: Encoded | undefined
      cost?: ContentCost
    }
  | Refusal

interface Waiter {
  resolve: (result: WorkerAnswer) => void
  reject: (error: Error) => void
  timer: NodeJS.Timeout
}

/** One worker for the process, started at the first big load; it keeps the process alive only while it has work. */
class Slicer {
  #worker: Worker | null = null
  #idleTimer: NodeJS.Timeout | null = null
  #nextId = 0
  readonly #waiting = new Map<number, Waiter>()

  /** The slices, or (for a request with a check) why the update was refused. */
  slice(request: Pick<SliceRequest, 'update' | 'check' | 'encode'>): Promise<WorkerAnswer> {
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      const worker = this.#started() // may throw (no thread to be had): then nothing waits
      if (this.#idleTimer) clearTimeout(this.#idleTimer)
      // At nice 19 on a saturated core the worker may hardly run: past this, the work is refused.
      // The worker is stopped too: it would go on with work nobody waits for, holding its memory
      // (what else it had queued fails as if it had crashed; the next request starts a new one).
      const timer = setTimeout(() => {
        this.#settle(worker, id)?.reject(new Error('slicing timed out'))
        void worker.terminate()
      }, SLICING_TIMEOUT_MS)
      timer.unref()
      this.#waiting.set(id, { resolve, reject, timer })
      worker.ref() // only while it has work: an idle slicer must not keep the process alive
      worker.postMessage({ id, ...request, structsPerSlice: STRUCTS_PER_SLICE } satisfies SliceRequest)
    })
  }

  /** Removes and returns request `id`'s waiter, its timeout cleared; unreferences an idle worker. */
  #settle(worker: Worker, id: number): Waiter | undefined {
    const waiter = this.#waiting.get(id)
    if (waiter) clearTimeout(waiter.timer)
    this.#waiting.delete(id)
    if (this.#waiting.size === 0) {
      worker.unref()
      this.#idleTimer = setTimeout(() => this.#retire(worker), WORKER_IDLE_MS)
      this.#idleTimer.unref()
    }
    return waiter
  }

  /** Stops `worker` if it is still the idle current one; the next request starts a new one. */
  #retire(worker: Worker): void {
    if (this.#worker !== worker || this.#waiting.size > 0) return
    this.#worker = null
    void worker.terminate()
  }

  #started(): Worker {
    if (this.#worker) return this.#worker
    const worker = startWorker()
    worker.on('message', (reply: SliceReply) => {
      // None waits if it timed out.
      this.#settle(worker, reply.id)?.resolve('slices' in reply ? reply : reply.refused)
    })
    const fail = (error: Error) => {
      if (this.#worker !== worker) return // its 'exit' after its 'error': a successor may run by now
      this.#worker = null
      for (const waiter of this.#waiting.values()) {
        clearTimeout(waiter.timer)
        waiter.reject(error)
      }
      this.#waiting.clear()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`update slicer exited with code ${code}`)))
    this.#worker = worker
    return worker
  }
}

const slicer = new Slicer()
