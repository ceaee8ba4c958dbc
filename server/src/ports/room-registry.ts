/**
 * The moments of a lapse of a server's lease: `run-out`, the lease last written ran out with no
 * renewal since; `renewed`, a renewal landed after that.
 */
export type LeaseLapse = 'run-out' | 'renewed'

/** A server, and where its internal port is reached. */
export interface ServerAddress {
  serverId: string
  /** `host:port` of the server's internal port. */
  internalAddress: string
}

/** Who owns which room (see `RoomOwnership`), by leases the adapter renews while it is open. */
export interface RoomRegistry extends RoomOwnership {
  close(): Promise<void>
}

/**
 * The server that owns a room: the one that holds its document and writes its journal and
 * snapshots; other servers relay their clients to it.
 */
export interface RoomOwner extends ServerAddress {
  /** One more at every change of owner: the fencing token the owner's durable writes carry. */
  epoch: number
}

/** What a claim of a room gave: it is this server's at `epoch`, or `owner`'s, whose lease is live. */
export type OwnershipClaim = { owned: true; epoch: number } | { owned: false; owner: RoomOwner }

/**
 * One owner per room, each living by its server's lease (renewed while the registry is open, so
 * a server that stops, or cannot reach the registry, loses all its rooms once the lease lapses).
 */
export interface RoomOwnership {
  /**
   * Takes `room` for this server, at the epoch after the last, when no live server owns it: none
   * ever did, its owner released it, or its owner's lease lapsed. `gone`: an owner known to be
   * gone before its lease lapses (its process exited) is replaced at once, if it still owns the
   * room at that epoch. Of servers claiming together, one wins; the others are told who.
   */
  claim(room: string, gone?: RoomOwner): Promise<OwnershipClaim>
  /** The live owner of `room`, or null. */
  ownerOf(room: string): Promise<RoomOwner | null>
  /** Gives `room` up if this server still owns it at `epoch`: the next claim takes it at once. */
  release(room: string, epoch: number): Promise<void>
  /**
   * Calls `listener` with `run-out` when this server's lease runs out unrenewed (the process
   * stalled, or the registry did not answer, longer than a lease): other servers may take its
   * rooms from now on; and with `renewed` when a renewal lands after that: they may have taken its
   * rooms meanwhile, fenced writes it has not made yet, or deleted them.
   */
  onLeaseLapsed(listener: (lapse: LeaseLapse) => void): void
  /**
   * Whether its epochs outlive this server's process (a registry the servers share). Only then do
   * the owners' writes carry them: Redis and S3 keep a fence longer than the embedded registry,
   * whose epochs start again at 1 at each start, remembers it.
   */
  readonly epochsOutliveProcess: boolean
}
