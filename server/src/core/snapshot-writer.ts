import { isOutOfSpace, RoomDeletedError, SnapshotConflictError, StaleEpochError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import { SerialQueue } from '../serial-queue.js'
import type { CoreMetrics } from './core-metrics.js'
import type { EventStream } from './event-stream.js'
import type { RoomJournal } from './room-journal.js'

export interface SnapshotPolicy {
  /** Longest a change waits before its snapshot starts (each wait is jittered below this). */
  intervalMs: number
  /** First retry delay after a failed write; doubles per failure up to `retryMaxMs`. */
  retryBaseMs: number
  retryMaxMs: number
}

/** What the writer needs of a room. */
export interface Snapshottable {
  readonly name: string
  readonly version: number
  /** The garbage-collected state: what users deleted is not in it. */
  encodeState(): Uint8Array
  /** Merges a state an earlier owner saved late into the room. */
  absorbStored(state: Uint8Array): Promise<unknown>
}

/** What a writer is built from: its room and store, when to write, and what the room loaded. */
export interface SnapshotWriterInit {
  room: Snapshottable
  store: SnapshotStore
  /** Told what each snapshot holds: it is durable from then on, and those entries are trimmed. */
  journal: Pick<RoomJournal, 'mark' | 'saved' | 'isDurable'>
  policy: SnapshotPolicy
  metrics: Pick<CoreMetrics, 'snapshotConflicts'>
  /** Told of each save and failed write (`snapshot.saved`, `snapshot.failed`). */
  events: EventStream
  logger: Logger
  /** True when the room loaded with changes no snapshot holds yet (replayed from the journal). */
  unsavedAtLoad: boolean
  /**
   * The stored version the loaded room holds everything of (null: nothing stored): each save is
   * conditional on the last it knows.
   */
  storedVersion: string | null
  /** The room's incarnation, saved with each snapshot. */
  generation: number
  /**
   * The store holds a later incarnation or this one's tombstone: the room was deleted while this
   * server held it (it missed the deletion). Nothing more is saved.
   */
  onDeleted: () => void
  /**
   * Handed each saved state (the app's `onStore`); resolves false when it failed, and the room
   * is saved again (and this called again) at the next interval.
   */
  onSaved?: (state: Uint8Array) => Promise<boolean>
  /** The epoch this server owns the room at, stored with each save (unset: it owns none). */
  epoch?: number
  /** A later owner saved the room: this one stops saving, and the room must stop. */
  onStale?: (error: StaleEpochError) => void
}

/** An earlier owner's late save may meet a save or two; this many in a row is not. */
const MAX_CONFLICTS_PER_WRITE = 10

/**
 * Saves one room's snapshots: at most one write at a time, a timer while the room is dirty,
 * and failed writes retried with backoff until one succeeds, never dropped.
 */
export class SnapshotWriter {
  #savedVersion: number
  /** Its writes, one at a time. */
  readonly #writes = new SerialQueue()
  #timer: NodeJS.Timeout | null = null
  #failures = 0
  #stopped = false
  #storedVersion: string | null
  readonly #generation: number
  readonly #onDeleted: () => void
  readonly #epoch: number | undefined
  readonly #onStale: (error: StaleEpochError) => void
  readonly #onSaved: SnapshotWriterInit['onSaved']
  /** The last saved state was not taken by `onSaved`: save again at the next interval. */
  #handOverOwed = false
  readonly #room: Snapshottable
  readonly #store: SnapshotStore
  readonly #journal: SnapshotWriterInit['journal']
  readonly #policy: SnapshotPolicy
  readonly #metrics: SnapshotWriterInit['metrics']
  readonly #events: EventStream
  readonly #logger: Logger

  constructor(init: SnapshotWriterInit) {
    const { room, unsavedAtLoad } = init
    this.#room = room
    this.#store = init.store
    this.#journal = init.journal
    this.#policy = init.policy
    this.#metrics = init.metrics
    this.#events = init.events
    this.#logger = init.logger
    this.#storedVersion = init.storedVersion
    this.#generation = init.generation
    this.#onDeleted = init.onDeleted
    this.#epoch = init.epoch
    this.#onStale = init.onStale ?? (() => {})
    this.#onSaved = init.onSaved
    this.#savedVersion = unsavedAtLoad ? room.version - 1 : room.version
    if (unsavedAtLoad) this.markDirty()
  }

  /** The room holds changes no saved snapshot holds, or updates its journal failed to keep. */
  get dirty(): boolean {
    return this.#room.version > this.#savedVersion || !this.#journal.isDurable || this.#handOverOwed
  }

  /** Called after every change: makes sure a snapshot is scheduled. */
  markDirty(): void {
    if (this.#timer || this.#stopped) return
    // Jitter spreads the writes of rooms that changed at the same moment.
    this.#schedule(this.#policy.intervalMs * (0.8 + 0.2 * Math.random()))
  }

  /**
   * Saves now if dirty, after any write in progress. Rejects if this write fails; a retry is
   * scheduled either way, so the change is never lost to a failure.
   */
  flush(): Promise<void> {
    return this.#writes.post(() => (this.dirty ? this.#write() : undefined))
  }

  /**
   * Saves as soon as possible (an append failed: only a snapshot makes that update durable). While
   * saves are failing, the backoff's next retry stands: it is already as soon as possible.
   */
  saveSoon(): void {
    if (this.#stopped || this.#failures > 0) return
    this.#schedule(0)
  }

  /** Stops the timer; writes already queued still finish. */
  stop(): void {
    this.#stopped = true
    this.#clearTimer()
  }

  /** Resolves when the writes queued so far have finished (or failed). */
  settled(): Promise<void> {
    return this.#writes.settled()
  }

  #schedule(delayMs: number): void {
    this.#clearTimer()
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.flush().catch(() => {}) // #write logged it and scheduled the retry
    }, delayMs)
    this.#timer.unref()
  }

  async #write(): Promise<void> {
    const started = performance.now()
    const room = this.#room.name
    const handOverOwed = this.#handOverOwed
    try {
      const journaled = this.#journal.mark() // before encoding: the snapshot holds all of these
      this.#handOverOwed = false
      const { version, state } = await this.#saveMerged()
      this.#savedVersion = Math.max(this.#savedVersion, version)
      this.#journal.saved(journaled) // never awaits the journal: trimming runs on its own
      this.#failures = 0
      const seconds = (performance.now() - started) / 1000
      this.#events.emit({ type: 'snapshot.saved', room, seconds, at: Date.now() })
      // After the save is acknowledged, and on the save queue: one hand-over at a time, in order.
      if (this.#onSaved) this.#handOverOwed = !(await this.#onSaved(state))
      if (this.dirty) this.markDirty()
    } catch (error) {
      if (error instanceof RoomDeletedError) throw error // not a failure: the room is gone
      if (error instanceof StaleEpochError) {
        this.stop() // not retried: another server owns the room now
        this.#onStale(error)
        throw error
      }
      this.#handOverOwed ||= handOverOwed // still owed: the retry's save hands it over
      this.#failures++
      const retryInMs = Math.min(
        this.#policy.retryMaxMs,
        this.#policy.retryBaseMs * 2 ** (this.#failures - 1),
      )
      const outOfSpace = isOutOfSpace(error)
      this.#events.emit({ type: 'snapshot.failed', room, error, outOfSpace, at: Date.now() })
      this.#logger.error(
        { err: error, room, failures: this.#failures, retryInMs },
        outOfSpace
          ? 'snapshot write failed: the disk is full; will retry until space returns'
          : 'snapshot write failed; will retry',
      )
      if (!this.#stopped) this.#schedule(retryInMs)
      throw error
    }
  }

  /**
   * Saves the room's garbage-collected state over the stored version it holds everything of. When
   * the store holds another (an earlier owner saved late, fenced since), that snapshot is merged
   * into the room (a CRDT union: what that owner acknowledged is kept) and the save is tried again
   * over it. Resolves with the room version saved and its state.
   */
  async #saveMerged(): Promise<{ version: number; state: Uint8Array }> {
    for (let conflicts = 0; ; conflicts++) {
      const version = this.#room.version
      const state = this.#room.encodeState()
      try {
        this.#storedVersion = await this.#store.save(
          this.#room.name,
          state,
          this.#storedVersion,
          this.#generation,
          this.#epoch,
        )
        return { version, state }
      } catch (error) {
        if (!(error instanceof SnapshotConflictError) || conflicts >= MAX_CONFLICTS_PER_WRITE) throw error
        this.#metrics.snapshotConflicts.inc()
        await this.#absorbStored()
      }
    }
  }

  /** Merges the stored snapshot into the room; the room's deletion when the store says it was. */
  async #absorbStored(): Promise<void> {
    const stored = await this.#store.load(this.#room.name)
    const generation = this.#generation
    if (stored && (stored.generation > generation || (stored.deleted && stored.generation >= generation))) {
      this.stop()
      this.#onDeleted()
      throw new RoomDeletedError(`room ${this.#room.name} was deleted (incarnation ${generation})`)
    }
    if (stored && !stored.deleted) await this.#room.absorbStored(stored.state)
    this.#storedVersion = stored?.version ?? null
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
