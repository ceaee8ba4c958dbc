/**
 * A room's saved state and the store's token for that exact version of it. A deleted room's
 * snapshot is its tombstone: empty, `deleted`, and lasting, so nothing brings the deleted
 * incarnation back (a server that missed the deletion finds it when it saves).
 */
export interface StoredSnapshot {
  /** One Yjs update; empty for a tombstone. */
  state: Uint8Array
  /** Opaque to the core (an S3 ETag, a file's identity); only passed back to `save`. */
  version: string
  /**
   * The room's incarnation: 0 until it is first deleted, one more after each deletion. A
   * tombstone carries the incarnation that was deleted.
   */
  generation: number
  /** True for a tombstone: incarnation `generation` was deleted. */
  deleted?: true
}

/** What `head` tells of a room's snapshot without reading its state. */
export type SnapshotHead = Omit<StoredSnapshot, 'state'>

/**
 * Durable storage of each room's full document state, as one Yjs update. Saves are conditional,
 * so a server never replaces bytes it has not merged: several servers may save one room.
 */
export interface SnapshotStore {
  /** The room's last saved state (or tombstone), or `null` if it was never saved. Throws if the store fails. */
  load(room: string): Promise<StoredSnapshot | null>
  /** The same as `load` without the state: cheap, for a server that loads the room from a peer. */
  head(room: string): Promise<SnapshotHead | null>
  /**
   * Leaves a tombstone for incarnation `generation` (the room was deleted), replacing whatever
   * is stored of it or an earlier one; a later incarnation already stored is left alone.
   */
  delete(room: string, generation: number): Promise<void>
  /**
   * Replaces the room's saved state if the stored version is still `expected` (`null`: nothing is
   * stored); resolves with the new version once it is durable. Rejects with
   * `SnapshotConflictError` when another writer got there first, leaving the stored state alone.
   * `generation` (default 0) is the incarnation the state belongs to; the core never saves an
   * incarnation over a tombstone of the same or a later one.
   */
  save(room: string, state: Uint8Array, expected: string | null, generation?: number): Promise<string>
  close(): Promise<void>
}

/** The incarnation a room loaded now has, given what its store holds. */
export function currentGeneration(head: SnapshotHead | null): number {
  if (!head) return 0
  return head.deleted ? head.generation + 1 : head.generation
}
