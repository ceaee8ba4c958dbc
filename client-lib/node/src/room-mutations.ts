import { randomInt } from 'node:crypto'
import * as Y from 'yjs'
import { SymphonyApiError } from './symphony-api-error.js'

export interface MutateOptions {
  /**
   * How often a read or a post that failed on the way (no answer, or a 5xx such as 503
   * `UPDATE_NOT_SAVED`) is tried again; the same bytes each time, so an update that did land is
   * not applied twice. Default 3.
   */
  retries?: number
  /** The wait before the first retry, doubled for each next one (with jitter). Default 250 ms. */
  retryDelayMs?: number
}

/** What `mutate` needs of the REST API. */
interface RoomUpdates {
  getUpdate(room: string): Promise<Uint8Array>
  postUpdate(room: string, update: Uint8Array): Promise<void>
}

/** Rooms whose Yjs client id a `RoomsApi` remembers; past it the oldest draws a new one. */
const REMEMBERED_ROOMS = 10_000

/**
 * `RoomsApi.mutate`: reads a room's state into a local `Y.Doc`, runs the change on it, and posts
 * only what the change made (`Y.mergeUpdates` of its updates). Not a lock: edits others make
 * meanwhile merge with it by Yjs's rules, as two users' edits do.
 *
 * Each room gets one Yjs client id per `RoomsApi` (drawn once, among the ids the room has never
 * seen, so never a user's), and a room's mutations run one at a time. Every write adds to the
 * same client instead of a new one each time: a document's clients stay in its state, and count
 * against `MAX_DOCUMENT_STRUCTS`. With auth on, the server binds it to `symphony:api`.
 */
export class RoomMutations {
  /** Room → the client id this object writes under there, oldest first. */
  readonly #clients = new Map<string, number>()
  /** Room → the end of its mutation queue. */
  readonly #queues = new Map<string, Promise<unknown>>()

  constructor(private readonly api: RoomUpdates) {}

  mutate<T>(room: string, change: (doc: Y.Doc) => T | Promise<T>, options: MutateOptions = {}): Promise<T> {
    const previous = this.#queues.get(room) ?? Promise.resolve()
    const run = previous.then(
      () => this.#mutate(room, change, options),
      () => this.#mutate(room, change, options),
    )
    const settled = run.catch(() => {})
    this.#queues.set(room, settled)
    void settled.then(() => {
      if (this.#queues.get(room) === settled) this.#queues.delete(room)
    })
    return run
  }

  async #mutate<T>(room: string, change: (doc: Y.Doc) => T | Promise<T>, options: MutateOptions): Promise<T> {
    const retrying = <R>(call: () => Promise<R>) => withRetries(call, options)
    const doc = new Y.Doc()
    try {
      Y.applyUpdate(doc, await retrying(() => this.api.getUpdate(room)))
      doc.clientID = this.#clientFor(room, doc)
      const made: Uint8Array[] = []
      doc.on('update', (update: Uint8Array) => made.push(update))
      let result!: T | Promise<T>
      doc.transact(() => {
        result = change(doc)
      })
      const value = await result
      if (made.length === 0) return value
      const update = made.length === 1 ? (made[0] as Uint8Array) : Y.mergeUpdates(made)
      try {
        await retrying(() => this.api.postUpdate(room, update))
      } catch (error) {
        // It may still land: the next write under this id could then carry other content at
        // the same clocks, which the server refuses. A new id for the next one.
        this.#clients.delete(room)
        throw error
      }
      return value
    } finally {
      doc.destroy()
    }
  }

  /** The client id to write `room` under: this object's, or a new one the room has never seen. */
  #clientFor(room: string, doc: Y.Doc): number {
    let client = this.#clients.get(room)
    this.#clients.delete(room)
    if (client === undefined) {
      const seen = Y.decodeStateVector(Y.encodeStateVector(doc))
      do client = randomInt(2 ** 32 - 1)
      while (seen.has(client))
    }
    this.#clients.set(room, client)
    for (const oldest of this.#clients.keys()) {
      if (this.#clients.size <= REMEMBERED_ROOMS) break
      this.#clients.delete(oldest)
    }
    return client
  }
}

/** Runs `call`, again after a failure on the way (no answer, or a 5xx), up to `retries` times. */
async function withRetries<R>(
  call: () => Promise<R>,
  { retries = 3, retryDelayMs = 250 }: MutateOptions,
): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (attempt >= retries || !mayRetry(error)) throw error
      const ceiling = retryDelayMs * 2 ** attempt
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)))
    }
  }
}

/** A request that got no answer (fetch's TypeError), or a server error other than 501. */
function mayRetry(error: unknown): boolean {
  if (error instanceof SymphonyApiError) return error.status >= 500 && error.status !== 501
  return error instanceof TypeError
}
