import { VERSION_ID_PATTERN, type VersionTarget } from '@symphony/client/wire'
import type { DocumentReads } from '../core/document-reads.js'
import { type RestoreVersionDeps, restoreVersion } from '../core/restore-version.js'
import { fromSnapshotStore, SnapshotVersionNotFoundError } from '../errors.js'
import { MAX_VERSIONS_PAGE, type SnapshotStore } from '../ports/snapshot-store.js'
import { ApiRefusal } from './api-refusal.js'
import { single } from './room-list-route.js'

/** Versions a listing answers when the request names no `limit`. */
export const DEFAULT_VERSIONS_LIMIT = 50

export type VersionsRouteDeps = RestoreVersionDeps & { snapshots: SnapshotStore; reads: DocumentReads }

/** An answer of the versions routes: a status and its JSON body (or that body already serialized). */
export type VersionsReply = { status: number; json: unknown } | { status: number; jsonText: string }

/** Answers a versions request (the room name already checked); throws `ApiRefusal` and the errors `toRefusal` maps. */
export type VersionsRoute = (
  method: string | undefined,
  target: VersionTarget & { room: string },
  query: URLSearchParams,
) => Promise<VersionsReply>

/**
 * A room's saved versions (the REST API's, and the internal endpoint's restore for the dashboard):
 * - `GET …/versions?limit=&cursor=` → `{ versions: [{ id, savedAt, bytes, deleted? }], nextCursor }`,
 *   newest first, from the snapshot store (S3: the bucket's object versions);
 * - `GET …/versions/{id}/document` → the version's document as JSON, as `…/document` gives it;
 * - `POST …/versions/{id}/restore` → `{ restored, version }` once the room holds it and it is saved
 *   as a version of its own (`restoreVersion`).
 * The room name is checked by the caller.
 */
export function createVersionsRoute(deps: VersionsRouteDeps) {
  return async (
    method: string | undefined,
    target: VersionTarget & { room: string },
    query: URLSearchParams,
  ) => {
    const route = `${method} ${target.part}`
    if (route === 'GET list') return { status: 200, json: await list(deps.snapshots, target.room, query) }
    if (route !== 'GET document' && route !== 'POST restore') {
      throw new ApiRefusal(405, 'METHOD_NOT_ALLOWED', `${method} is not a method of this route`)
    }
    const { id } = target
    if (id === null) {
      throw new ApiRefusal(
        400,
        'VERSION_ID_INVALID',
        'a version id is letters, digits, _ - and . (at most 256)',
      )
    }
    if (route === 'GET document') {
      const version = await fromSnapshotStore(deps.snapshots.readVersion(target.room, id))
      return { status: 200, jsonText: await deps.reads.jsonText(version.state) }
    }
    const outcome = await restoreVersion(deps, target.room, id)
    if (!outcome.saved) {
      throw new ApiRefusal(
        503,
        'UPDATE_NOT_SAVED',
        'the room is restored but the restore is not saved yet (the journal and snapshot stores are failing); it is saved once they answer',
      )
    }
    return { status: 200, json: { restored: outcome.restored, version: outcome.version } }
  }
}

async function list(snapshots: SnapshotStore, room: string, query: URLSearchParams): Promise<unknown> {
  const limitText = single(query, 'limit', 'LIMIT_INVALID')
  const limit = limitText === null ? DEFAULT_VERSIONS_LIMIT : Number(limitText)
  if (limitText !== null && (!/^[1-9][0-9]{0,3}$/.test(limitText) || limit > MAX_VERSIONS_PAGE)) {
    throw new ApiRefusal(400, 'LIMIT_INVALID', `limit must be a whole number from 1 to ${MAX_VERSIONS_PAGE}`)
  }
  const cursor = single(query, 'cursor', 'CURSOR_INVALID')
  const badCursor = new ApiRefusal(400, 'CURSOR_INVALID', 'cursor must be a nextCursor this API gave')
  if (cursor !== null && !VERSION_ID_PATTERN.test(cursor)) throw badCursor
  const page = await fromSnapshotStore(snapshots.listVersions(room, { limit, cursor })).catch(
    (error: unknown) => {
      throw error instanceof SnapshotVersionNotFoundError ? badCursor : error
    },
  )
  return {
    versions: page.versions.map(({ id, savedAt, bytes, deleted }) => ({
      id,
      savedAt: savedAt.toISOString(),
      bytes,
      ...(deleted ? { deleted } : {}),
    })),
    nextCursor: page.nextCursor,
  }
}
