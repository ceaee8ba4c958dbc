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
  /** The epoch of the room's owner that saved it; absent when saved without one. */
  epoch?: number
}

/** What `head` tells of a room's snapshot without reading its state. */
export type SnapshotHead = Omit<StoredSnapshot, 'state'>

/** One saved version of a room's snapshot, as `listVersions` tells of it. */
export interface SnapshotVersion {
  /**
   * The store's id of this saved version: stable while the version is kept, letters, digits and
   * `_ - .` only (`VERSION_ID_PATTERN`: at most 256, never `.` or `..`), so it goes in a URL
   * path as it is.
   */
  id: string
  /** When it was saved. */
  savedAt: Date
  /** Its stored size. */
  bytes: number
  /** A tombstone: the room's deletion (it holds no document). Set when the store can tell cheaply. */
  deleted?: true
}

/** A page of versions, newest first; `nextCursor` (null on the last page) reads on from there. */
export interface SnapshotVersionPage {
  versions: SnapshotVersion[]
  nextCursor: string | null
}

/** Most versions one `listVersions` call may ask for (S3 answers at most this many per request). */
export const MAX_VERSIONS_PAGE = 1000
/** What a version id or a cursor may hold (shared with the clients, which put it in paths). */
export { VERSION_ID_PATTERN } from '@symphony/client/wire'

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
   * incarnation over a tombstone of the same or a later one. `epoch` (the room's owner's) is
   * stored with the state; a save refused for its version where a later epoch is stored rejects
   * with `StaleEpochError` instead: a later owner saved, and this one must stop.
   */
  save(
    room: string,
    state: Uint8Array,
    expected: string | null,
    generation?: number,
    epoch?: number,
  ): Promise<string>
  /**
   * The room's saved versions (the current one first, then older ones, tombstones included), at
   * most `limit` (1 to `MAX_VERSIONS_PAGE`, else `RangeError`), after `cursor` (a `nextCursor`
   * this store gave; `SnapshotVersionNotFoundError` if it names nothing it can read on from). How
   * many old versions are kept is the store's (S3: the bucket's versioning and lifecycle rules).
   */
  listVersions(room: string, options: { limit: number; cursor?: string | null }): Promise<SnapshotVersionPage>
  /**
   * One saved version, as `load` would have returned it then (`version` is the version's id).
   * Rejects with `SnapshotVersionNotFoundError` for an id this store does not hold for the room.
   */
  readVersion(room: string, id: string): Promise<StoredSnapshot>
  close(): Promise<void>
}

/** The incarnation a room loaded now has, given what its store holds. */
export function currentGeneration(head: SnapshotHead | null): number {
  if (!head) return 0
  return head.deleted ? head.generation + 1 : head.generation
}

/** Checks `listVersions`' limit the same way in every store. */
export function checkVersionsLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_VERSIONS_PAGE) {
    throw new RangeError(`limit must be a whole number from 1 to ${MAX_VERSIONS_PAGE}`)
  }
}
