import { roomFromPath, roomPath } from './room-name.js'

/**
 * The HTTP paths that name a room, each with the room percent-encoded as one segment
 * (`roomPath`), so `team/doc 42` is `team%2Fdoc%2042`.
 *
 * On the sync server's public port:
 * - `GET /rooms/<room>/access`: the access check (`checkAccess`), the token in `Authorization`.
 * - `/api/v1/rooms/<room>`, `…/document`, `…/update`, `…/authors`: the REST API (`@symphony/node`'s
 *   `createRoomsApi`), with `Authorization: Bearer <API_SECRET>`; `GET /api/v1/rooms` lists rooms
 *   (`API_ROOM_LIST_PATH`); `GET …/versions`, `GET …/versions/<id>/document` and
 *   `POST …/versions/<id>/restore` are the room's saved versions (`apiVersionPath`).
 *
 * On its internal port (`INTERNAL_PORT`), which the load balancer never exposes, with
 * `internalAuthorization(INTERNAL_TOKEN)`:
 * - `GET /internal/rooms/<room>/state`: a loaded room's full state as one Yjs update (404 when not
 *   loaded there), so a server loading the room gets every update, not an old snapshot.
 * - `DELETE /internal/rooms/<room>`: deletes the room everywhere (204), as the REST API does.
 * - `POST /internal/rooms/<room>/versions/<id>/restore`: restores a saved version (the dashboard's
 *   Restore), answering as the REST API's restore does (`internalVersionPath`).
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

/** What a version path names: `list` (`…/versions`), or a version's `document` or `restore`. */
export type VersionPart = 'list' | 'document' | 'restore'

export interface VersionTarget {
  room: string | null
  /** The version id (letters, digits, `_ - .`), or null for the list. */
  id: string | null
  part: VersionPart
}

/** A version id (or versions cursor) as the stores give it: it goes in a path as it is (never `.` or `..`). */
export const VERSION_ID_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,256}$/

/** The REST API's path of a room's versions (`id` omitted), or of one version's document or restore. */
export function apiVersionPath(room: string, id?: string, part?: 'document' | 'restore'): string {
  return versionPath(API_ROOMS, room, id, part)
}

/** The internal endpoint's path of a version's restore. */
export function internalVersionPath(room: string, id: string): string {
  return versionPath(INTERNAL_ROOMS, room, id, 'restore')
}

/** What a REST API versions path names, or undefined if it is none. */
export function parseApiVersionPath(path: string): VersionTarget | undefined {
  return parseVersionPath(path, API_ROOMS)
}

/** What an internal versions path names, or undefined if it is none. */
export function parseInternalVersionPath(path: string): VersionTarget | undefined {
  return parseVersionPath(path, INTERNAL_ROOMS)
}

function versionPath(prefix: string, room: string, id?: string, part?: 'document' | 'restore'): string {
  const versions = `${prefix}${roomPath(room)}/versions`
  return id === undefined ? versions : `${versions}/${encodeURIComponent(id)}/${part ?? 'document'}`
}

/** `<prefix><room>/versions` or `<prefix><room>/versions/<id>/<document|restore>`. */
function parseVersionPath(path: string, prefix: string): VersionTarget | undefined {
  if (!path.startsWith(prefix)) return undefined
  const [segment, versions, id, part, ...rest] = path.slice(prefix.length).split('/')
  if (segment === undefined || versions !== 'versions' || rest.length > 0) return undefined
  const room = roomFromPath(segment)
  if (id === undefined) return { room, id: null, part: 'list' }
  if (part !== 'document' && part !== 'restore') return undefined
  // An id the stores never give (or escaped) is left to the caller to refuse, as a bad room name is.
  return { room, id: decodeId(id), part }
}

function decodeId(segment: string): string | null {
  try {
    const id = decodeURIComponent(segment)
    return VERSION_ID_PATTERN.test(id) ? id : null
  } catch {
    return null
  }
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
