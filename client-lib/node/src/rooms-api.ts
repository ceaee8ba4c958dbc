import {
  type ApiRoomPart,
  apiRoomPath,
  isValidRoomName,
  ROOM_NAME_RULE,
  type ServerErrorCode,
} from '@symphony/client/wire'

/** Who wrote under a Yjs client id of a room: the token subject that first wrote under it. */
export interface RoomAuthor {
  clientId: number
  /** The token's `sub` (REST API writes: `symphony:api`). */
  subject: string
  /** The subject's display name (the token's `name`) when it last bound a client id; null if none. */
  name: string | null
}
/** An error answer of the REST API: its HTTP status and the server's `{ error: { code, message } }`. */
export class SymphonyApiError extends Error {
  constructor(
    readonly status: number,
    /** The server's error code, or `HTTP_ERROR` when its answer carried none (a proxy's error page). */
    readonly code: ServerErrorCode | 'HTTP_ERROR',
    message: string,
  ) {
    super(message)
    this.name = 'SymphonyApiError'
  }
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
  const call = async (
    room: string,
    part: ApiRoomPart,
    init: RequestInit = {},
    query = '',
  ): Promise<Response> => {
    // Refused here as the server would: a URL parser resolves `.` and `..` as path steps, so
    // `rooms/../document` would reach another route (404) instead of naming a room.
    if (!isValidRoomName(room)) {
      throw new SymphonyApiError(400, 'ROOM_NAME_INVALID', `${JSON.stringify(room)}: ${ROOM_NAME_RULE}`)
    }
    const url = new URL(`${apiRoomPath(room, part)}${query}`, base)
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
  return {
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
  }
}
