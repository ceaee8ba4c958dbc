import {
  API_ROOM_LIST_PATH,
  type ApiRoomPart,
  apiRoomPath,
  apiVersionPath,
  isValidRoomName,
  ROOM_NAME_RULE,
  type ServerErrorCode,
  VERSION_ID_PATTERN,
} from '@symphony/client/wire'
import type * as Y from 'yjs'
import { type MutateOptions, RoomMutations } from './room-mutations.js'
import { SymphonyApiError } from './symphony-api-error.js'

/** Who wrote under a Yjs client id of a room: the token subject that first wrote under it. */
export interface RoomAuthor {
  clientId: number
  /** The token's `sub` (REST API writes: `symphony:api`). */
  subject: string
  /** The subject's display name (the token's `name`) when it last bound a client id; null if none. */
  name: string | null
}

/** One room of a listing, from the metadata the servers record (seconds behind the rooms). */
export interface RoomSummary {
  name: string
  /** The document's size as last recorded (an estimate of its encoded size, in bytes). */
  bytes: number
  /** Open connections to it, over every live server. */
  connections: number
  /** When a client or the REST API last changed it (ISO 8601), or null if no change was recorded. */
  updatedAt: string | null
}

/** A page of rooms, in name order (by Unicode code point). */
export interface RoomList {
  rooms: RoomSummary[]
  /** Pass it as `cursor` for the next page; null on the last. */
  nextCursor: string | null
}

export interface ListRoomsOptions {
  /** Only rooms whose name starts with this (at most 128 characters). */
  prefix?: string
  /** Rooms per page: 1 to the server's `API_MAX_LIST_LIMIT` (1 000). Default 100. */
  limit?: number
  /** The previous page's `nextCursor`. */
  cursor?: string | null
}

/** One saved version of a room (a snapshot the server saved), newest first in a listing. */
export interface RoomVersion {
  /** Pass it to `restore` (or read it at `GET …/versions/{id}/document`). */
  id: string
  /** When it was saved (ISO 8601). */
  savedAt: string
  /** Its stored size in bytes. */
  bytes: number
  /** True for the room's deletion (it holds no document, and cannot be restored). */
  deleted?: true
}

/** A page of a room's versions, newest first. */
export interface RoomVersionList {
  versions: RoomVersion[]
  /** Pass it as `cursor` for the next (older) page; null on the last. */
  nextCursor: string | null
}

export interface ListVersionsOptions {
  /** Versions per page: 1 to 1000. Default 50. */
  limit?: number
  /** The previous page's `nextCursor`. */
  cursor?: string | null
}

/** What a restore did. */
export interface RestoreResult {
  /** The version restored. */
  restored: string
  /** The room's newest version once the restore was saved (it holds the restore): restoring `restored`'s predecessor undoes it. */
  version: string | null
}

export interface RoomsApiOptions {
  /** The sync server, e.g. `https://sync.example.com` (any server of a cluster). */
  url: string
  /** The server's `API_SECRET`. */
  secret: string
  /** For tests and runtimes without a global fetch. */
  fetch?: typeof fetch
}

/** The REST API of a Symphony server, typed. Made by `createRoomsApi`. */
export interface RoomsApi {
  /** The document as JSON: each root type by its shape (map → object, list → array, text → string). */
  getDocument(room: string): Promise<Record<string, unknown>>
  /** The whole state as one Yjs update, or only what `stateVector` lacks. */
  getUpdate(room: string, stateVector?: Uint8Array): Promise<Uint8Array>
  /** Applies a Yjs update as a client's update is applied. */
  postUpdate(room: string, update: Uint8Array): Promise<void>
  /** Which token subject wrote under each Yjs client id of the room (with auth on), by client id. */
  authors(room: string): Promise<RoomAuthor[]>
  /** Deletes the room: its clients are closed, its stored state removed. */
  deleteRoom(room: string): Promise<void>
  /**
   * A page of rooms in name order, with their size, connections and last change (needs the
   * server's metadata database: 501 `METADATA_OFF` with `DATABASE_URL=none`).
   */
  list(options?: ListRoomsOptions): Promise<RoomList>
  /**
   * Changes a room from your backend: reads its state into a local `Y.Doc`, runs `change` on it,
   * and posts only the difference (as `postUpdate`: applied as a client's edit, resolved once
   * saved). Resolves with what `change` returns; nothing is posted if it changed nothing. Not a
   * lock: edits made meanwhile merge with it as two users' edits do. This object's mutations of
   * one room run one at a time, under one Yjs client id of its own (never a user's); a read or
   * post that fails on the way is retried with the same bytes, so nothing is applied twice.
   */
  mutate<T>(room: string, change: (doc: Y.Doc) => T | Promise<T>, options?: MutateOptions): Promise<T>
  /**
   * A page of the room's saved versions, newest first (how many are kept is the server's: S3's
   * bucket versioning and lifecycle rule, or `SNAPSHOT_FILE_VERSIONS` for a file store).
   */
  versions(room: string, options?: ListVersionsOptions): Promise<RoomVersionList>
  /**
   * Makes the live room version `id`'s content, through an ordinary update: every connected client
   * sees it at once and offline copies merge onto it. Resolves once the restore is saved as a
   * version of its own. Rejects with 404 `VERSION_NOT_FOUND`, or 409 `VERSION_NOT_RESTORABLE` for
   * a deletion or a version from before the room was deleted.
   */
  restore(room: string, id: string): Promise<RestoreResult>
}

/**
 * A client for the server's REST API (`API_SECRET` set on the server). Rejects with
 * `SymphonyApiError` when the server refuses, and with its 400 `ROOM_NAME_INVALID` for an invalid
 * room name without sending anything.
 *
 * @example
 * const api = createRoomsApi({ url: 'https://sync.example.com', secret: process.env.API_SECRET })
 * const doc = await api.getDocument('team-7/board')
 */
export function createRoomsApi(options: RoomsApiOptions): RoomsApi {
  if (typeof options.secret !== 'string' || options.secret.length < 32) {
    throw new TypeError('createRoomsApi: secret must be the server’s API_SECRET (at least 32 characters)')
  }
  const base = new URL(options.url)
  const fetchImpl = options.fetch ?? fetch
  const request = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(path, base)
    const response = await fetchImpl(url, {
      ...init,
      headers: { authorization: `Bearer ${options.secret}`, ...(init.headers as Record<string, string>) },
    })
    if (response.ok) return response
    const body = (await response.json().catch(() => null)) as {
      error?: { code?: ServerErrorCode; message?: string }
    } | null
    throw new SymphonyApiError(
      response.status,
      body?.error?.code ?? 'HTTP_ERROR',
      body?.error?.message ?? `${response.status} ${response.statusText}`,
    )
  }
  // Refused here as the server would: a URL parser resolves `.` and `..` as path steps, so
  // `rooms/../document` would reach another route (404) instead of naming a room.
  const checkRoom = (room: string) => {
    if (!isValidRoomName(room)) {
      throw new SymphonyApiError(400, 'ROOM_NAME_INVALID', `${JSON.stringify(room)}: ${ROOM_NAME_RULE}`)
    }
  }
  const call = async (room: string, part: ApiRoomPart, init: RequestInit = {}, query = '') => {
    checkRoom(room)
    return request(`${apiRoomPath(room, part)}${query}`, init)
  }
  const api: RoomsApi = {
    async getDocument(room) {
      return (await (await call(room, 'document')).json()) as Record<string, unknown>
    },
    async getUpdate(room, stateVector) {
      const query = stateVector
        ? `?stateVector=${encodeURIComponent(Buffer.from(stateVector).toString('base64'))}`
        : ''
      return new Uint8Array(await (await call(room, 'update', {}, query)).arrayBuffer())
    },
    async postUpdate(room, update) {
      await call(room, 'update', {
        method: 'POST',
        body: new Blob([update as Uint8Array<ArrayBuffer>]),
        headers: { 'content-type': 'application/octet-stream' },
      })
    },
    async authors(room) {
      return ((await (await call(room, 'authors')).json()) as { authors: RoomAuthor[] }).authors
    },
    async deleteRoom(room) {
      await call(room, '', { method: 'DELETE' })
    },
    async list({ prefix, limit, cursor } = {}) {
      const query = new URLSearchParams()
      if (prefix !== undefined) query.set('prefix', prefix)
      if (limit !== undefined) query.set('limit', String(limit))
      if (cursor != null) query.set('cursor', cursor)
      const path = query.size > 0 ? `${API_ROOM_LIST_PATH}?${query}` : API_ROOM_LIST_PATH
      return (await (await request(path)).json()) as RoomList
    },
    mutate: (room, change, mutateOptions) => mutations.mutate(room, change, mutateOptions),
    async versions(room, { limit, cursor } = {}) {
      checkRoom(room)
      const query = new URLSearchParams()
      if (limit !== undefined) query.set('limit', String(limit))
      if (cursor != null) query.set('cursor', cursor)
      const path = apiVersionPath(room)
      return (await (await request(query.size > 0 ? `${path}?${query}` : path)).json()) as RoomVersionList
    },
    async restore(room, id) {
      checkRoom(room)
      // As the server would refuse it; `..` would be a path step to a URL parser.
      if (!VERSION_ID_PATTERN.test(id)) {
        throw new SymphonyApiError(400, 'VERSION_ID_INVALID', `${JSON.stringify(id)} is not a version id`)
      }
      const response = await request(apiVersionPath(room, id, 'restore'), { method: 'POST' })
      return (await response.json()) as RestoreResult
    },
  }
  const mutations = new RoomMutations(api)
  return api
}
