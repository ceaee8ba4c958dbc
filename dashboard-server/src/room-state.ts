import { internalAuthorization, internalRoomPath } from '@symphony/client/wire'
import { documentToJson } from '@symphony/server/document-json'
import { ApiError } from './app-error.js'

/** How long a live server may take to hand over a room's state. */
const FETCH_TIMEOUT_MS = 3_000

/** Where saved rooms are read from (the server's SnapshotStore has this method). */
export interface SnapshotReader {
  load(room: string): Promise<{ state: Uint8Array; deleted?: true } | null>
}

/**
 * A room's document as JSON: live from a sync server holding it (its internal endpoint, address
 * from the metadata tables, each holder in turn), else as last saved in the snapshot store.
 */
export async function readRoomState(
  room: string,
  addresses: string[],
  sources: { internalToken: string | null; snapshots: SnapshotReader },
): Promise<{ source: 'live' | 'snapshot'; document: Record<string, unknown> }> {
  if (addresses.length > 0 && sources.internalToken) {
    const live = await fetchLive(room, addresses, sources.internalToken)
    if (live) return { source: 'live', document: documentToJson(live) }
  }
  const saved = await sources.snapshots.load(room)
  if (saved && !saved.deleted) return { source: 'snapshot', document: documentToJson(saved.state) }
  throw new ApiError(
    404,
    'ROOM_NOT_FOUND',
    saved ? `"${room}" was deleted` : `no live server holds "${room}" and it was never saved`,
  )
}

/** Deletes `room` through the first of `addresses` (sync servers' internal endpoints) that answers. */
export async function deleteRoom(room: string, addresses: string[], internalToken: string): Promise<void> {
  for (const address of addresses) {
    try {
      const response = await fetch(`http://${address}${internalRoomPath(room)}`, {
        method: 'DELETE',
        headers: { authorization: internalAuthorization(internalToken) },
        signal: AbortSignal.timeout(DELETE_TIMEOUT_MS),
      })
      if (response.status === 204) return
    } catch {
      // That server is gone or slow; the next one may answer.
    }
  }
  throw new ApiError(503, 'NO_SYNC_SERVER', 'no live sync server could delete the room; try again')
}

/** Deleting waits for the room's clients to close and its stores to be cleared. */
const DELETE_TIMEOUT_MS = 15_000

async function fetchLive(
  room: string,
  addresses: string[],
  internalToken: string,
): Promise<Uint8Array | null> {
  for (const address of addresses) {
    try {
      const response = await fetch(`http://${address}${internalRoomPath(room, 'state')}`, {
        headers: { authorization: internalAuthorization(internalToken) },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      if (!response.ok) continue
      return new Uint8Array(await response.arrayBuffer())
    } catch {
      // That server is gone or slow; the next one may answer.
    }
  }
  return null
}
