import { roomFromPath, roomPath } from './room-name.js'

/**
 * The HTTP paths that name a room, each with the room percent-encoded as one segment
 * (`roomPath`), so `team/doc 42` is `team%2Fdoc%2042`.
 *
 * On the sync server's public port:
 * - `GET /rooms/<room>/access`: the access check (`checkAccess`), the token in `Authorization`.
 * - `/api/v1/rooms/<room>`, `…/document`, `…/update`, `…/authors`: the REST API (`@symphony/node`'s
 *   `createRoomsApi`), with `Authorization: Bearer <API_SECRET>`; `GET /api/v1/rooms` lists rooms
 *   (`API_ROOM_LIST_PATH`).
 *
 * On its internal port (`INTERNAL_PORT`), which the load balancer never exposes, with
 * `internalAuthorization(INTERNAL_TOKEN)`:
 * - `GET /internal/rooms/<room>/state`: a loaded room's full state as one Yjs update (404 when not
 *   loaded there), so a server loading the room gets every update, not an old snapshot.
 * - `DELETE /internal/rooms/<room>`: deletes the room everywhere (204), as the REST API does.
 */
const ACCESS = { prefix: '/rooms/', suffix: '/access' }
const API_ROOMS = '/api/v1/rooms/'
const INTERNAL_ROOMS = '/internal/rooms/'

/** What a room path names: the room (null when its escapes are not UTF-8) and the part after it. */
export interface RoomTarget<Part extends string> {
  room: string | null
  part: Part
}

/** The access check's path for `room`. */
export function accessCheckPath(room: string): string {
  return `${ACCESS.prefix}${roomPath(room)}${ACCESS.suffix}`
}

/** The room an access-check path names ('' for an empty segment), or undefined if it is not one. */
export function parseAccessCheckPath(path: string): RoomTarget<''> | undefined {
  const segment = segmentOf(path, ACCESS.prefix, ACCESS.suffix)
  return segment === undefined ? undefined : { room: roomFromPath(segment), part: '' }
}

/** The REST API's room listing: `GET /api/v1/rooms?prefix=&limit=&cursor=`. */
export const API_ROOM_LIST_PATH = '/api/v1/rooms'

export type ApiRoomPart = '' | 'document' | 'update' | 'authors'

/** The REST API path of `room`, or of its document, update or authors resource. */
export function apiRoomPath(room: string, part: ApiRoomPart = ''): string {
  return `${API_ROOMS}${roomPath(room)}${part && `/${part}`}`
}

/** What a REST API path names, or undefined if it names no room resource. */
export function parseApiRoomPath(path: string): RoomTarget<ApiRoomPart> | undefined {
  return parseRoomPath(path, API_ROOMS, ['document', 'update', 'authors'] as const)
}

export type InternalRoomPart = '' | 'state'

/** The internal-endpoint path of `room` (DELETE), or of its state (GET). */
export function internalRoomPath(room: string, part: InternalRoomPart = ''): string {
  return `${INTERNAL_ROOMS}${roomPath(room)}${part && `/${part}`}`
}

/** What an internal-endpoint path names, or undefined if it names nothing there. */
export function parseInternalRoomPath(path: string): RoomTarget<InternalRoomPart> | undefined {
  return parseRoomPath(path, INTERNAL_ROOMS, ['state'] as const)
}

/** The `Authorization` header value the internal endpoint expects. */
export function internalAuthorization(token: string): string {
  return `Bearer ${token}`
}

/**
 * `<prefix><segment>[/<part>]`. With a part, an empty segment names the room '' (the server
 * refuses it as a bad name); without one, only a segment that is not empty names a room.
 */
function parseRoomPath<Part extends string>(
  path: string,
  prefix: string,
  parts: readonly Part[],
): RoomTarget<'' | Part> | undefined {
  for (const part of parts) {
    const segment = segmentOf(path, prefix, `/${part}`)
    if (segment !== undefined) return { room: roomFromPath(segment), part }
  }
  const segment = segmentOf(path, prefix, '')
  return segment ? { room: roomFromPath(segment), part: '' } : undefined
}

/** The one path segment between `prefix` and `suffix`, or undefined if `path` is not so made. */
function segmentOf(path: string, prefix: string, suffix: string): string | undefined {
  if (path.length < prefix.length + suffix.length) return undefined
  if (!path.startsWith(prefix) || !path.endsWith(suffix)) return undefined
  const segment = path.slice(prefix.length, path.length - suffix.length)
  return segment.includes('/') ? undefined : segment
}
