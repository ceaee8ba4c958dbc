import type { Logger } from '../logger.js'
import type { PeerServer, RoomRegistry } from '../ports/room-registry.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { JournalContents, UpdateJournal } from '../ports/update-journal.js'

/** Fetches a room's full state from a peer server that holds it live. */
export type PeerStateFetcher = (peer: PeerServer, room: string) => Promise<Uint8Array>

export interface InitialState {
  state: Uint8Array | null
  source: 'peer' | 'snapshot' | 'empty'
  /** The stored snapshot's version `state` holds everything of; undefined when not known (peer). */
  storedVersion: string | null | undefined
  /** Updates journaled since the last snapshot, to apply on top of `state`. */
  journal: JournalContents
}

export interface RoomStateSourceInit {
  /** Where the live peers holding a room are found. */
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  /** Null in single-server mode: there is no peer to ask. */
  fetchFromPeer: PeerStateFetcher | null
  logger: Logger
}

/**
 * Where a room's state comes from when a server loads it: a live peer first (it has every
 * update), else the snapshot store, else an empty document; then, always, what the journal holds
 * since the last snapshot (a crashed server's last updates). A failing snapshot store or journal
 * is an error, never an empty document, so a stored room is never overwritten with nothing.
 */
export class RoomStateSource {
  readonly #registry: RoomRegistry
  readonly #snapshots: SnapshotStore
  readonly #journal: UpdateJournal
  readonly #fetchFromPeer: PeerStateFetcher | null
  readonly #logger: Logger

  constructor({ registry, snapshots, journal, fetchFromPeer, logger }: RoomStateSourceInit) {
    this.#registry = registry
    this.#snapshots = snapshots
    this.#journal = journal
    this.#fetchFromPeer = fetchFromPeer
    this.#logger = logger
  }

  async load(room: string): Promise<InitialState> {
    // The journal first: a server trims entries only after saving a snapshot that holds them,
    // so an entry gone by now is in the snapshot read next.
    const journal = await this.#journal.read(room)
    const fromPeer = await this.#fromPeers(room)
    if (fromPeer) return { state: fromPeer, source: 'peer', journal, storedVersion: undefined }
    const snapshot = await this.#snapshots.load(room)
    if (!snapshot) return { state: null, source: 'empty', journal, storedVersion: null }
    return { state: snapshot.state, source: 'snapshot', journal, storedVersion: snapshot.version }
  }

  async #fromPeers(room: string): Promise<Uint8Array | null> {
    if (!this.#fetchFromPeer) return null
    let peers: PeerServer[]
    try {
      peers = await this.#registry.peersFor(room)
    } catch (error) {
      this.#logger.warn({ err: error, room }, 'room registry unavailable; loading from the snapshot store')
      return null
    }
    for (const peer of peers) {
      try {
        return await this.#fetchFromPeer(peer, room)
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
