import { RoomMovedError, ServerBusyError } from '../errors.js'
import { Waiters } from '../waiters.js'
import { RoomMailbox } from './room-mailbox.js'

/**
 * The states of one room instance on a server, from its first acquire until it is gone:
 *
 * ```
 * loading ──► live ──► unloading ──► gone
 *    │  │       ▲ │       │ │
 *    │  │       └─┼───────┘ │  (the final save failed: kept, and retried)
 *    │  ▼         ▼         ▼
 *    │  deleting ◄──────────┘ ──► gone
 *    └──────────────────────────► gone  (the load failed)
 * loading, live, unloading ──► lost ──► gone  (a later owner fenced its writes)
 * ```
 *
 * Every change of state goes through `RoomLife.#enter`, which refuses any transition not listed
 * here, so the order of a room's life is written in one place.
 */
export type RoomState = 'loading' | 'live' | 'unloading' | 'deleting' | 'lost' | 'gone'

export const ROOM_TRANSITIONS: Readonly<Record<RoomState, readonly RoomState[]>> = {
  loading: ['live', 'deleting', 'lost', 'gone'],
  live: ['unloading', 'deleting', 'lost'],
  unloading: ['live', 'deleting', 'lost', 'gone'],
  deleting: ['gone'],
  lost: ['gone'],
  gone: [],
}

/** What a room's life does at each step; the manager provides it (loading, saving, freeing). */
export interface RoomLifeSteps<Loaded> {
  load(life: RoomLife<Loaded>): Promise<Loaded>
  /** The final save before unloading; rejects if it failed (the room is then kept). */
  saveBeforeUnload(loaded: Loaded): Promise<void>
  /** Closes the deleted room's clients and stops its saves, at once (before any wait). */
  closeDeleted(loaded: Loaded): void
  /** Closes the lost room's clients (to come back to its new owner) and stops its saves, at once. */
  closeLost(loaded: Loaded): void
  /** Resolves once the saves already started are done (none is started after `closeDeleted`). */
  savesSettled(loaded: Loaded): Promise<void>
  /** Deregisters, unsubscribes and frees the loaded room. */
  free(loaded: Loaded): Promise<void>
  /**
   * Removes what this server stored of the deleted room (its journal); `loaded` if it loaded.
   * Called only once the deletion is recorded in the snapshot store (its tombstone).
   */
  removeStored(loaded: Loaded | null): Promise<void>
  /** The load failed: the instance is gone without ever being live. */
  loadFailed(error: unknown): void
  /** A load attempt failed and is tried again after `delayMs`, since someone still waits for the room. */
  loadRetrying?(error: unknown, attempt: number, delayMs: number): void
}

/** How a failed load is tried again while someone waits: after `baseMs`, doubling up to `maxMs`. */
export interface LoadRetry {
  baseMs: number
  maxMs: number
}

export interface RoomLifeOptions<Loaded> {
  name: string
  steps: RoomLifeSteps<Loaded>
  /** How long an empty room stays loaded, since reconnects are common. */
  graceMs: number
  /** How long before a failed final save is tried again by unloading again. */
  retryUnloadMs: number
  /**
   * Retries a failed load while the room is still loading and held (someone waits for it): a slow
   * or failing dependency delays the joiners, and each leaves when its own wait runs out. Unset:
   * the first failure ends the instance.
   */
  loadRetry?: LoadRetry
  /** Told of every transition (tests, logs). */
  onTransition?: (from: RoomState, to: RoomState) => void
}

/**
 * One room instance's life on this server: its state, its holders, its grace timer, and its
 * mailbox, on which loading, unloading and its end run one after another, and after the writes
 * posted before them. A holder releases
 * exactly the instance it acquired; a deletion takes effect at once (the state says `deleting`
 * before anything is awaited), so no joiner is ever admitted to a room being deleted.
 */
export class RoomLife<Loaded> {
  readonly name: string
  #state: RoomState = 'loading'
  #holders = 0
  #loaded: Loaded | null = null
  #graceTimer: NodeJS.Timeout | null = null
  /** An unload is posted to the mailbox and has not started. */
  #unloadPosted = false
  /** Shed to free memory (`unloadWhenFree`): the next grace period is none. */
  #withoutGrace = false
  /** The instance's one queue: its life's steps, and the room's writes that wait (`RoomMailbox`). */
  readonly mailbox = new RoomMailbox()
  #deletion: Promise<void> | null = null
  /** Set once a later owner took the room: its end here (see `lose`). */
  #loss: Promise<void> | null = null
  readonly #changeWaiters = new Waiters<void>()
  /** Those waiting for the load (`whenReady`): a joiner who leaves is removed, not kept until it settles. */
  readonly #readyWaiters = new Waiters<Loaded>()
  #readySettled = false
  /** Settles once loaded (rejects if the load failed). */
  readonly ready: Promise<Loaded>
  readonly #steps: RoomLifeSteps<Loaded>
  readonly #options: RoomLifeOptions<Loaded>

  constructor(options: RoomLifeOptions<Loaded>) {
    this.name = options.name
    this.#steps = options.steps
    this.#options = options
    this.ready = this.#run(() => this.#load())
    // The one reaction on `ready`: a load retried through an outage may not settle for long.
    this.ready.then(
      (loaded) => {
        this.#readySettled = true
        this.#readyWaiters.resolveAll(loaded)
      },
      (error) => {
        this.#readySettled = true
        this.#readyWaiters.rejectAll(error)
      },
    )
  }

  get state(): RoomState {
    return this.#state
  }

  get holders(): number {
    return this.#holders
  }

  /** Whether a later owner took the room from this instance (`lose`). */
  get wasLost(): boolean {
    return this.#loss !== null
  }

  /** The loaded room while it is live, or unloading (still serving its last save). */
  get loaded(): Loaded | null {
    return this.#state === 'live' || this.#state === 'unloading' ? this.#loaded : null
  }

  /** Whether a joiner may hold this instance now (else it waits for the next state and asks again). */
  get admits(): boolean {
    return this.#state === 'loading' || this.#state === 'live'
  }

  /** `ready`, or `signal`'s reason once it aborts first; a wait given up leaves nothing behind. */
  whenReady(signal?: AbortSignal): Promise<Loaded> {
    return this.#readySettled ? this.ready : this.#readyWaiters.wait(signal)
  }

  /** Resolves at the next change of state, or rejects with `signal`'s reason once it aborts first. */
  nextChange(signal?: AbortSignal): Promise<void> {
    return this.#changeWaiters.wait(signal)
  }

  /** How many wait now for the load or the next change of state. */
  get waiting(): number {
    return this.#readyWaiters.size + this.#changeWaiters.size
  }

  hold(): void {
    this.#holders++
    this.#withoutGrace = false
    this.#cancelGrace()
  }

  /** One holder left; the last one starts the grace period. */
  unhold(): void {
    this.#holders = Math.max(0, this.#holders - 1)
    if (this.#holders === 0 && this.#state === 'live') this.#startGrace(this.#graceMs())
  }

  /**
   * Unloads (saving first, as always) as soon as nobody holds the room, with no grace period: the
   * server needs its memory. A later hold gives the room its grace back.
   */
  unloadWhenFree(): void {
    this.#withoutGrace = true
    if (this.#holders === 0 && this.#state === 'live') this.#startGrace(0)
  }

  #graceMs(): number {
    return this.#withoutGrace ? 0 : this.#options.graceMs
  }

  /**
   * Deletes this instance: `deleting` at once, its clients closed; then, after the steps posted
   * before (a load, a final save, writes that wait), its saves settle, it is freed, and once `recorded` (the tombstone
   * is written) its journal goes. If the tombstone could not be written, the journal stays: the
   * deletion failed, and nothing acknowledged may be lost by it.
   */
  delete(recorded: Promise<void> = Promise.resolve()): Promise<void> {
    if (this.#deletion) return this.#deletion
    if (this.#loss) return this.#loss // its owner, who loaded it, removes what is stored
    if (this.#state === 'gone') return Promise.resolve()
    this.#cancelGrace()
    this.#enter('deleting')
    if (this.#loaded) this.#steps.closeDeleted(this.#loaded)
    this.#deletion = this.#end(
      (loaded) => this.#steps.closeDeleted(loaded),
      async (loaded) => {
        await recorded
        await this.#steps.removeStored(loaded)
      },
    )
    return this.#deletion
  }

  /**
   * A later owner fenced this one's writes: `lost` at once, its clients closed (they come back and
   * reach the new owner) and its saves stopped; then, after the steps posted before, it is freed
   * without a final save, which would be refused (or, before the new owner saved, stand for edits
   * it never confirmed). Nothing it acknowledged is lost: each was journaled before the fence.
   */
  lose(): Promise<void> {
    if (this.#loss) return this.#loss
    if (this.#deletion || this.#state === 'gone') return this.#deletion ?? Promise.resolve()
    this.#cancelGrace()
    this.#enter('lost')
    if (this.#loaded) this.#steps.closeLost(this.#loaded)
    this.#loss = this.#end((loaded) => this.#steps.closeLost(loaded))
    return this.#loss
  }

  /**
   * The end of a deleted or lost instance, after the steps posted before: `close` its clients (also
   * those admitted before the load finished), wait out its saves, free it, then `after`; gone.
   */
  #end(
    close: (loaded: Loaded) => void,
    after: (loaded: Loaded | null) => Promise<void> = async () => {},
  ): Promise<void> {
    return this.#run(async () => {
      const loaded = this.#loaded
      try {
        if (loaded) {
          close(loaded)
          await this.#steps.savesSettled(loaded)
          await this.#steps.free(loaded)
        }
        await after(loaded)
      } finally {
        this.#loaded = null
        this.#enter('gone')
      }
    })
  }

  /** Frees the room now, whoever holds it (shutdown, after every room was saved). */
  unloadNow(): Promise<void> {
    return this.#run(async () => {
      if (this.#state !== 'live' && this.#state !== 'unloading') return
      if (this.#state === 'live') this.#enter('unloading')
      await this.#free()
    })
  }

  async #load(): Promise<Loaded> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.#loaded = await this.#steps.load(this)
        break
      } catch (error) {
        if (await this.#retryLoad(error, attempt)) continue
        if (this.#state === 'loading') this.#enter('gone')
        this.#steps.loadFailed(error)
        throw error
      }
    }
    if (this.#state === 'loading') {
      this.#enter('live')
      if (this.#holders === 0) this.#startGrace(this.#graceMs())
    }
    return this.#loaded
  }

  /**
   * After failed attempt `attempt`: true (once its backoff has passed) to try again, which it does
   * only while the room is still loading and someone holds it, also after the backoff.
   */
  async #retryLoad(error: unknown, attempt: number): Promise<boolean> {
    const retry = this.#options.loadRetry
    const wanted = () => this.#state === 'loading' && this.#holders > 0
    // No memory for it, or another server owns it: refused now (1013), not retried while its
    // clients wait (they reconnect, and are routed anew).
    if (!retry || !wanted() || error instanceof ServerBusyError || error instanceof RoomMovedError)
      return false
    // Jittered, so the rooms one outage failed do not all come back in the same instant.
    const delayMs = Math.min(retry.maxMs, retry.baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2)
    this.#steps.loadRetrying?.(error, attempt, delayMs)
    await new Promise((resolve) => setTimeout(resolve, delayMs))
    return wanted()
  }

  /** The grace period ended with nobody holding the room: final save, then free. */
  async #unload(): Promise<void> {
    if (this.#state !== 'live' || this.#holders > 0) return
    // Writes posted behind this step (their holders came and went while it waited) go first.
    if (this.mailbox.posted > 1) return this.#startGrace(0)
    const loaded = this.#loaded as Loaded
    this.#enter('unloading')
    try {
      await this.#steps.saveBeforeUnload(loaded)
    } catch {
      // Kept with its unsaved changes; the writer retries, and so does the next unload. (A
      // deletion may have come meanwhile: `state` is read anew after each wait.)
      if (this.state !== 'unloading') return
      this.#enter('live')
      if (this.#holders === 0) this.#startGrace(this.#options.retryUnloadMs)
      return
    }
    if (this.state === 'unloading') await this.#free()
  }

  /** Gone only once freed: a new instance must not subscribe while this one still unsubscribes. */
  async #free(): Promise<void> {
    const loaded = this.#loaded
    try {
      if (loaded) await this.#steps.free(loaded)
    } finally {
      this.#loaded = null
      this.#enter('gone')
    }
  }

  #enter(next: RoomState): void {
    const from = this.#state
    if (!ROOM_TRANSITIONS[from].includes(next)) {
      throw new Error(`room ${this.name}: no transition from ${from} to ${next}`)
    }
    this.#state = next
    this.#options.onTransition?.(from, next)
    this.#changeWaiters.resolveAll()
  }

  /** Runs `step` after every step posted before it. */
  #run<T>(step: () => Promise<T>): Promise<T> {
    return this.mailbox.post(step)
  }

  #startGrace(delayMs: number): void {
    this.#cancelGrace()
    this.#graceTimer = setTimeout(() => {
      this.#graceTimer = null
      if (this.#unloadPosted) return // one unload in the mailbox at a time
      this.#unloadPosted = true
      void this.#run(() => {
        this.#unloadPosted = false
        return this.#unload()
      })
    }, delayMs)
    this.#graceTimer.unref()
  }

  #cancelGrace(): void {
    if (this.#graceTimer) clearTimeout(this.#graceTimer)
    this.#graceTimer = null
  }
}
