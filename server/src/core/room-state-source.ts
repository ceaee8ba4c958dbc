import { within } from '../deadline.js'
import type { Logger } from '../logger.js'
import type { PeerServer, RoomRegistry } from '../ports/room-registry.js'
import { currentGeneration, type SnapshotHead, type SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'
import { incarnationKey } from './incarnation.js'
import { type LoadWaitObserver, timedWait } from './room-waits.js'

/**
 * Fetches a room's full state from a peer server that holds incarnation `generation` of it live;
 * rejects if the peer does not (it holds another incarnation, or none).
 */
export type PeerStateFetcher = (peer: PeerServer, room: string, generation: number) => Promise<Uint8Array>

export interface InitialState {
  state: Uint8Array | null
  source: 'peer' | 'snapshot' | 'empty'
  /** The room's incarnation: one more than the last deleted one (0 if never deleted). */
  generation: number
  /** The stored snapshot's version `state` holds everything of; undefined when not known (peer). */
  storedVersion: string | null | undefined
  /** Updates journaled since the last snapshot, to apply on top of `state`. */
  journal: JournalContents
}

/** A room's current incarnation, and the snapshot head it was read from. */
export interface Incarnation {
  generation: number
  head: SnapshotHead | null
}

export interface RoomStateSourceInit {
  /** Where the live peers holding a room are found. */
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  /** Null in single-server mode: there is no peer to ask. */
  fetchFromPeer: PeerStateFetcher | null
  /** The longest to wait for the registry's answer before loading from the snapshot store. */
  registryWaitMs?: number
  /** Told how long each call waited on its dependency (`symphony_room_load_wait_seconds`). */
  observeWait?: LoadWaitObserver
  logger: Logger
}

/**
 * Where a room's state comes from when a server loads it: the snapshot store's head names the
 * current incarnation; then a live peer holding that incarnation (it has every update), else the
 * snapshot, else an empty document (also after a tombstone); then, always, what the journal holds
 * of that incarnation since the last snapshot (a crashed server's last updates). A failing snapshot store or journal
 * is an error, never an empty document, so a stored room is never overwritten with nothing.
 */
export class RoomStateSource {
  readonly #registry: RoomRegistry
  readonly #snapshots: SnapshotStore
  readonly #journal: UpdateJournal
  readonly #fetchFromPeer: PeerStateFetcher | null
  readonly #logger: Logger
  readonly #observeWait: LoadWaitObserver | undefined

  readonly #registryWaitMs: number

  constructor({
    registry,
    snapshots,
    journal,
    fetchFromPeer,
    registryWaitMs,
    observeWait,
    logger,
  }: RoomStateSourceInit) {
    this.#registryWaitMs = registryWaitMs ?? 2_000
    this.#observeWait = observeWait
    this.#registry = registry
    this.#snapshots = snapshots
    this.#journal = journal
    this.#fetchFromPeer = fetchFromPeer
    this.#logger = logger
  }

  /** Which incarnation of the room is current: the lasting store says (a tombstone stays). */
  async incarnation(room: string): Promise<Incarnation> {
    const head = await timedWait(this.#observeWait, 'snapshots', () => this.#snapshots.head(room))
    return { generation: currentGeneration(head), head }
  }

  /**
   * The live peers holding the room, as the registry says (empty when it does not answer in
   * time, or in single-server mode). Never rejects. A load starts it first, beside its other
   * reads: a peer that registers after the answer is not missed, as the journal (read after
   * subscribing) holds what its clients sent and anti-entropy brings the rest.
   */
  async lookUpPeers(room: string): Promise<PeerServer[]> {
    if (!this.#fetchFromPeer) return []
    try {
      return await timedWait(this.#observeWait, 'registry', () =>
        within(this.#registry.peersFor(room), this.#registryWaitMs, 'the registry lookup'),
      )
    } catch (error) {
      this.#logger.warn({ err: error, room }, 'room registry unavailable; loading from the snapshot store')
      return []
    }
  }

  async load(
    room: string,
    { generation, head }: Incarnation,
    peers: Promise<PeerServer[]> = this.lookUpPeers(room),
  ): Promise<InitialState> {
    // The journal next: a server trims entries only after saving a snapshot that holds them,
    // so an entry gone by now is in the snapshot read after.
    const journal = await timedWait(this.#observeWait, 'journal', () =>
      this.#journal.read(incarnationKey(room, generation)),
    )
    const fromPeer = await this.#fromPeers(room, generation, await peers)
    if (fromPeer) return { state: fromPeer, source: 'peer', generation, journal, storedVersion: undefined }
    if (!head || head.deleted) {
      return { state: null, source: 'empty', generation, journal, storedVersion: head?.version ?? null }
    }
    const snapshot = await timedWait(this.#observeWait, 'snapshots', () => this.#snapshots.load(room))
    if (!snapshot || snapshot.deleted || snapshot.generation !== generation) {
      throw new Error(`room ${room} changed incarnation while it loaded; try again`)
    }
    return { state: snapshot.state, source: 'snapshot', generation, journal, storedVersion: snapshot.version }
  }

  async #fromPeers(room: string, generation: number, peers: PeerServer[]): Promise<Uint8Array | null> {
    if (!this.#fetchFromPeer) return null
    for (const peer of peers) {
      try {
        const fetch = this.#fetchFromPeer
        return await timedWait(this.#observeWait, 'peer', () => fetch(peer, room, generation))
      } catch (error) {
        this.#logger.warn(
          { err: error, room, peer: peer.serverId },
          'peer state fetch failed; trying the next',
        )
      }
    }
    return null
  }
}
