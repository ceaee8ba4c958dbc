import { currentGeneration, type SnapshotHead, type SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'
import { incarnationKey } from './incarnation.js'
import { type LoadWaitObserver, timedWait } from './room-waits.js'

export interface InitialState {
  state: Uint8Array | null
  source: 'snapshot' | 'empty'
  /** The room's incarnation: one more than the last deleted one (0 if never deleted). */
  generation: number
  /** The stored snapshot's version `state` holds everything of (null: nothing stored). */
  storedVersion: string | null
  /** Updates journaled since the last snapshot, to apply on top of `state`. */
  journal: JournalContents
}

/** A room's current incarnation, and the snapshot head it was read from. */
export interface Incarnation {
  generation: number
  head: SnapshotHead | null
}

export interface RoomStateSourceInit {
  snapshots: SnapshotStore
  journal: UpdateJournal
  /** Told how long each call waited on its dependency (`symphony_room_load_wait_seconds`). */
  observeWait?: LoadWaitObserver
}

/**
 * Where a room's state comes from when its owner loads it: the snapshot store's head names the
 * current incarnation; then the snapshot, else an empty document (also after a tombstone); then,
 * always, what the journal holds of that incarnation since the last snapshot (what an earlier
 * owner confirmed and saved nowhere else). A failing snapshot store or journal is an error, never
 * an empty document, so a stored room is never overwritten with nothing.
 */
export class RoomStateSource {
  readonly #snapshots: SnapshotStore
  readonly #journal: UpdateJournal
  readonly #observeWait: LoadWaitObserver | undefined

  constructor({ snapshots, journal, observeWait }: RoomStateSourceInit) {
    this.#observeWait = observeWait
    this.#snapshots = snapshots
    this.#journal = journal
  }

  /** Which incarnation of the room is current: the lasting store says (a tombstone stays). */
  async incarnation(room: string): Promise<Incarnation> {
    const head = await timedWait(this.#observeWait, 'snapshots', () => this.#snapshots.head(room))
    return { generation: currentGeneration(head), head }
  }

  async load(room: string, { generation, head }: Incarnation): Promise<InitialState> {
    // The journal first: an owner trims entries only after saving a snapshot that holds them, so
    // an entry gone by now is in the snapshot read after.
    const journal = await timedWait(this.#observeWait, 'journal', () =>
      this.#journal.read(incarnationKey(room, generation)),
    )
    if (!head || head.deleted) {
      return { state: null, source: 'empty', generation, journal, storedVersion: head?.version ?? null }
    }
    const snapshot = await timedWait(this.#observeWait, 'snapshots', () => this.#snapshots.load(room))
    if (!snapshot || snapshot.deleted || snapshot.generation !== generation) {
      throw new Error(`room ${room} changed incarnation while it loaded; try again`)
    }
    return { state: snapshot.state, source: 'snapshot', generation, journal, storedVersion: snapshot.version }
  }
}
