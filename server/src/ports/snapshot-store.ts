/** A room's saved state and the store's token for that exact version of it. */
export interface StoredSnapshot {
  state: Uint8Array
  /** Opaque to the core (an S3 ETag, a file's identity); only passed back to `save`. */
  version: string
}

/**
 * Durable storage of each room's full document state, as one Yjs update. Saves are conditional,
 * so a server never replaces bytes it has not merged: several servers may save one room.
 */
export interface SnapshotStore {
  /** The room's last saved state, or `null` if it was never saved. Throws if the store fails. */
  load(room: string): Promise<StoredSnapshot | null>
  /** Removes the room's snapshot (the room was deleted); nothing to remove is fine. */
  delete(room: string): Promise<void>
  /**
   * Replaces the room's saved state if the stored version is still `expected` (`null`: nothing is
   * stored); resolves with the new version once it is durable. Rejects with
   * `SnapshotConflictError` when another writer got there first, leaving the stored state alone.
   */
  save(room: string, state: Uint8Array, expected: string | null): Promise<string>
  close(): Promise<void>
}
