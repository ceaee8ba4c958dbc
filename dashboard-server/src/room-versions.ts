import { internalAuthorization, internalVersionPath, VERSION_ID_PATTERN } from '@symphony/client/wire'
import { documentToJson } from '@symphony/server/document-json'
import { ApiError } from './app-error.js'

/** What the dashboard reads of a room's saved versions (the server's SnapshotStore has these). */
export interface VersionReader {
  listVersions(
    room: string,
    options: { limit: number; cursor?: string | null },
  ): Promise<{
    versions: { id: string; savedAt: Date; bytes: number; deleted?: true }[]
    nextCursor: string | null
  }>
  readVersion(room: string, id: string): Promise<{ state: Uint8Array; deleted?: true }>
}

/** A restore waits for the room to load, apply the version and save it. */
const RESTORE_TIMEOUT_MS = 30_000

/** A page of the room's saved versions, newest first, as the REST API answers it. */
export async function listVersions(
  snapshots: VersionReader,
  room: string,
  page: { limit: number; cursor: string | null },
): Promise<unknown> {
  if (page.cursor !== null && !VERSION_ID_PATTERN.test(page.cursor)) {
    throw new ApiError(400, 'CURSOR_INVALID', 'cursor must be a nextCursor this API gave')
  }
  const found = await snapshots.listVersions(room, page).catch((error: unknown) => {
    throw versionError(
      error,
      new ApiError(400, 'CURSOR_INVALID', 'cursor must be a nextCursor this API gave'),
    )
  })
  return {
    versions: found.versions.map(({ id, savedAt, bytes, deleted }) => ({
      id,
      savedAt: savedAt.toISOString(),
      bytes,
      ...(deleted ? { deleted } : {}),
    })),
    nextCursor: found.nextCursor,
  }
}

/** One saved version's document as JSON. */
export async function readVersion(snapshots: VersionReader, room: string, id: string): Promise<unknown> {
  checkId(id)
  const version = await snapshots.readVersion(room, id).catch((error: unknown) => {
    throw versionError(
      error,
      new ApiError(404, 'VERSION_NOT_FOUND', `"${room}" has no saved version "${id}"`),
    )
  })
  if (version.deleted)
    throw new ApiError(409, 'VERSION_NOT_RESTORABLE', 'that version is the room’s deletion')
  return documentToJson(version.state)
}

/**
 * Restores a saved version through the first of `addresses` (sync servers' internal endpoints)
 * that answers: the server's own answer (status and body) is passed on, refusals included.
 */
export async function restoreVersion(
  room: string,
  id: string,
  addresses: string[],
  internalToken: string,
): Promise<{ status: number; body: unknown }> {
  checkId(id)
  for (const address of addresses) {
    try {
      const response = await fetch(`http://${address}${internalVersionPath(room, id)}`, {
        method: 'POST',
        headers: { authorization: internalAuthorization(internalToken) },
        signal: AbortSignal.timeout(RESTORE_TIMEOUT_MS),
      })
      // A 5xx may be that server's trouble alone: the next one may do it.
      if (response.status < 500) return { status: response.status, body: await response.json() }
    } catch {
      // That server is gone or slow; the next one may answer.
    }
  }
  throw new ApiError(503, 'NO_SYNC_SERVER', 'no live sync server could restore the version; try again')
}

function checkId(id: string): void {
  if (!VERSION_ID_PATTERN.test(id)) {
    throw new ApiError(400, 'VERSION_ID_INVALID', 'a version id is letters, digits, _ - and . (at most 256)')
  }
}

/** The store's "no such version" as `notFound`; any other failure as a 503 to retry. */
function versionError(error: unknown, notFound: ApiError): ApiError {
  if ((error as { code?: string }).code === 'VERSION_NOT_FOUND') return notFound
  return new ApiError(503, 'SNAPSHOTS_UNAVAILABLE', 'the snapshot store did not answer; try again')
}
