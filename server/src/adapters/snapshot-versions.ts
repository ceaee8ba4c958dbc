import { SnapshotVersionNotFoundError } from '../errors.js'
import {
  checkVersionsLimit,
  type SnapshotVersion,
  type SnapshotVersionPage,
  VERSION_ID_PATTERN,
} from '../ports/snapshot-store.js'

/** Saved versions the memory and file stores keep per room by default, the current one included. */
export const DEFAULT_SNAPSHOT_VERSIONS = 20
/** The most a store may be told to keep per room (each is a whole copy of the document). */
export const MAX_SNAPSHOT_VERSIONS = 1000

/** The error every store gives for a version id (or cursor) it does not hold for the room. */
export function versionNotFound(room: string, id: string): SnapshotVersionNotFoundError {
  return new SnapshotVersionNotFoundError(
    `room ${JSON.stringify(room)} has no saved version ${JSON.stringify(id)}`,
  )
}

/**
 * A page of `all` (newest first) for stores that hold a room's versions in hand: at most `limit`,
 * those `olderThan(cursor)` admits when a cursor is given (null: not a cursor of this store).
 */
export function pageOfVersions(
  all: SnapshotVersion[],
  { limit, cursor }: { limit: number; cursor?: string | null },
  olderThan: (cursor: string) => ((version: SnapshotVersion) => boolean) | null,
): SnapshotVersionPage {
  checkVersionsLimit(limit)
  let rest = all
  if (cursor != null) {
    const admits = VERSION_ID_PATTERN.test(cursor) ? olderThan(cursor) : null
    if (!admits)
      throw new SnapshotVersionNotFoundError(`${JSON.stringify(cursor)} is not a cursor of this store`)
    rest = all.filter(admits)
  }
  const versions = rest.slice(0, limit)
  const last = versions.at(-1)
  return { versions, nextCursor: rest.length > limit && last ? last.id : null }
}
