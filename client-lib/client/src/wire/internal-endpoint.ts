import { roomFromPath, roomPath } from './room-name.js'

/**
 * The sync servers' internal endpoint, on its own port (`INTERNAL_PORT`), which the load
 * balancer never exposes. Peers and the dashboard call it with the shared `INTERNAL_TOKEN`:
 *
 * - `GET /internal/rooms/<room>/state`: a loaded room's full state as one Yjs update (404 when the
 *   room is not loaded there), so a server loading the room gets every update, not an old snapshot.
 * - `DELETE /internal/rooms/<room>`: deletes the room everywhere (204), as the REST API does.
 *
 * The room is percent-encoded (`roomPath`).
 */
const INTERNAL_ROOMS = '/internal/rooms/'

/** The path of a room's state on the internal endpoint. */
export function internalStatePath(room: string): string {
  return `${INTERNAL_ROOMS}${roomPath(room)}/state`
}

/** The path that deletes a room through the internal endpoint. */
export function internalRoomPath(room: string): string {
  return `${INTERNAL_ROOMS}${roomPath(room)}`
}

/** What an internal-endpoint path names, or null if it names nothing there. */
export function parseInternalPath(path: string): { room: string; state: boolean } | null {
  if (!path.startsWith(INTERNAL_ROOMS)) return null
  const rest = path.slice(INTERNAL_ROOMS.length)
  const state = rest.endsWith('/state')
  const segment = state ? rest.slice(0, -'/state'.length) : rest
  if (segment === '' || segment.includes('/')) return null
  const room = roomFromPath(segment)
  return room === null ? null : { room, state }
}

/** The `Authorization` header value the internal endpoint expects. */
export function internalAuthorization(token: string): string {
  return `Bearer ${token}`
}
