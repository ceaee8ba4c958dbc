import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  API_ROOM_LIST_PATH,
  isValidRoomName,
  parseApiRoomPath,
  parseApiVersionPath,
  ROOM_NAME_RULE,
} from '@symphony/client/wire'
import type { Limits } from '../config.js'
import { ProtocolError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { ServerMetrics } from '../metrics.js'
import type { RoomOwner } from '../ports/room-registry.js'
import type { RoomApi } from '../room-api.js'
import { ApiRefusal, toRefusal } from './api-refusal.js'
import type { RoomOwners } from './owner-forward.js'
import { listRooms, type RoomListDeps } from './room-list-route.js'
import type { VersionsRoute } from './versions-route.js'

export interface RestApiDeps {
  /** `API_SECRET`: callers send `Authorization: Bearer <secret>`. */
  secret: string
  /** A room's API (`SyncServer.room`): every room route answers through it. */
  room: (name: string) => RoomApi
  limits: Limits
  metrics: ServerMetrics
  logger: Logger
  /** `GET /api/v1/rooms`: the metadata store's rooms (null: none kept), and the largest page. */
  list: Omit<RoomListDeps, 'logger'>
  /** The rooms' saved versions (`…/versions`), shared with the internal endpoint. */
  versions: VersionsRoute
  /** With the relay (one copy per room): requests for a room another server owns go to it. */
  owners?: RoomOwners
}

/**
 * Who sent the request: an app's backend on the public port (`Authorization: Bearer <API_SECRET>`),
 * or another server that sent it on to this room's owner over the internal port (its token checked
 * there): served here, never sent on again.
 */
export type ApiCaller = 'app' | 'forwarded'

export type ApiHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  query: URLSearchParams,
  caller?: ApiCaller,
) => void

/** The internal port's prefix of the REST API's paths, for requests sent on to a room's owner. */
export const FORWARDED_API_PREFIX = '/internal'

/**
 * The REST API for an app's backend (`/api/v1/rooms/{room}/…`): read a room as JSON or as a Yjs
 * update, write an update as a client would, read which token subject wrote under each client id,
 * delete a room; list, read and restore its saved versions (`…/versions`, versions-route.ts); and
 * list rooms (`/api/v1/rooms`, room-list-route.ts). Every server answers for every room: a room
 * not loaded here is loaded the way a joining client loads it, or, with the relay, a request for a
 * room another server owns is sent on to that owner and its answer streamed back.
 */
export function createRestApi(deps: RestApiDeps): ApiHandler {
  const expected = Buffer.from(`Bearer ${deps.secret}`)
  const { versions, owners } = deps

  return (request, response, path, query, caller = 'app') => {
    void answer(request, path, query, caller).then(
      (reply) =>
        'owner' in reply ? forward(request, response, reply.owner, path, query) : send(response, reply),
      (error: unknown) => refuse(response, path, error),
    )
  }

  function forward(
    request: IncomingMessage,
    response: ServerResponse,
    owner: RoomOwner,
    path: string,
    query: URLSearchParams,
  ): Promise<void> {
    const search = query.size > 0 ? `?${query}` : ''
    const forwarded = owners?.forward(request, response, owner, `${FORWARDED_API_PREFIX}${path}${search}`)
    return Promise.resolve(forwarded).catch((error: unknown) => {
      deps.logger.warn({ err: error, path, owner: owner.serverId }, "the room's owner did not answer")
      refuse(response, path, new ApiRefusal(503, 'SERVER_BUSY', "the room's server did not answer; retry"))
    })
  }

  function refuse(response: ServerResponse, path: string, error: unknown): void {
    const refusal = toRefusal(error)
    if (refusal.status >= 500) deps.logger.error({ err: error, path }, 'REST API request failed')
    send(response, {
      status: refusal.status,
      json: { error: { code: refusal.code, message: refusal.message } },
    })
  }

  /** Where a room's request is answered: null here, else the owner it goes to. */
  async function ownerOf(name: string, caller: ApiCaller): Promise<RoomOwner | null> {
    return caller === 'forwarded' || !owners ? null : owners.ownerElsewhere(name)
  }

  async function answer(
    request: IncomingMessage,
    path: string,
    query: URLSearchParams,
    caller: ApiCaller,
  ): Promise<Reply | { owner: RoomOwner }> {
    const presented = Buffer.from(request.headers.authorization ?? '')
    const allowed =
      caller === 'forwarded' || (presented.length === expected.length && timingSafeEqual(presented, expected))
    if (!allowed) throw new ApiRefusal(401, 'UNAUTHORIZED', 'send Authorization: Bearer <API_SECRET>')
    if (path === API_ROOM_LIST_PATH) {
      if (request.method !== 'GET') {
        throw new ApiRefusal(405, 'METHOD_NOT_ALLOWED', `${request.method} is not a method of this route`)
      }
      return { status: 200, json: await listRooms({ ...deps.list, logger: deps.logger }, query) }
    }
    const version = parseApiVersionPath(path)
    if (version) {
      const { room } = version
      if (!isValidRoomName(room)) throw new ApiRefusal(400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
      // A restore writes to the room: its owner does it. Listing and reading versions need only the store.
      const owner = version.part === 'restore' ? await ownerOf(room, caller) : null
      return owner ? { owner } : versions(request.method, { ...version, room }, query)
    }
    const target = parseApiRoomPath(path)
    if (!target) throw new ApiRefusal(404, 'NOT_FOUND', 'no such API route')
    const name = target.room
    if (!isValidRoomName(name)) throw new ApiRefusal(400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
    const owner = await ownerOf(name, caller)
    return owner
      ? { owner }
      : roomReply(deps, name, `${request.method} ${target.part && `/${target.part}`}`, {
          request,
          query,
        })
  }
}

/** The answer to `route` (method and part, `GET /document`) of a room this server serves. */
async function roomReply(
  deps: RestApiDeps,
  name: string,
  route: string,
  { request, query }: { request: IncomingMessage; query: URLSearchParams },
): Promise<Reply> {
  const room = deps.room(name)
  switch (route) {
    case 'GET /document':
      return { status: 200, jsonText: await room.jsonText() }
    case 'GET /authors':
      return { status: 200, json: { authors: await room.authors() } }
    case 'GET /update':
      return { status: 200, bytes: await diffFor(room, decodeStateVector(query.get('stateVector'))) }
    case 'POST /update':
      await room.applyUpdate(await readBody(request, deps.limits.maxMessageBytes))
      return { status: 204 }
    case 'DELETE ':
      await room.delete()
      return { status: 204 }
    default:
      throw new ApiRefusal(405, 'METHOD_NOT_ALLOWED', `${request.method} is not a method of this route`)
  }
}

/** An answer: a body of `bytes`, of JSON (`json`, or `jsonText` already serialized), or none. */
type Reply = { status: number; json?: unknown; jsonText?: string; bytes?: Uint8Array }

function send(response: ServerResponse, { status, json, jsonText, bytes }: Reply): void {
  if (jsonText !== undefined) {
    response.writeHead(status, { 'Content-Type': 'application/json' })
    response.end(jsonText)
  } else if (bytes) {
    response.writeHead(status, { 'Content-Type': 'application/octet-stream', 'Content-Length': bytes.length })
    response.end(bytes)
  } else if (json !== undefined) {
    response.writeHead(status, { 'Content-Type': 'application/json' })
    response.end(JSON.stringify(json))
  } else {
    response.writeHead(status).end()
  }
}

function decodeStateVector(base64: string | null): Uint8Array {
  if (base64 === null) return new Uint8Array([0])
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(base64)) {
    throw new ApiRefusal(400, 'STATE_VECTOR_INVALID', 'stateVector must be base64')
  }
  return new Uint8Array(Buffer.from(base64, 'base64'))
}

/** What a holder of `stateVector` lacks; a vector that is base64 but no state vector is refused. */
async function diffFor(room: RoomApi, stateVector: Uint8Array): Promise<Uint8Array> {
  try {
    return await room.encodeState(stateVector)
  } catch (error) {
    if (error instanceof ProtocolError) throw new ApiRefusal(400, 'STATE_VECTOR_INVALID', error.message)
    throw error
  }
}

/** The request body, refused with 413 past `maxBytes` (the largest message a client may send). */
async function readBody(request: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const type = request.headers['content-type']?.split(';')[0]?.trim()
  if (type !== 'application/octet-stream') {
    throw new ApiRefusal(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the update as application/octet-stream')
  }
  if (Number(request.headers['content-length'] ?? 0) > maxBytes) {
    request.resume()
    throw new ApiRefusal(413, 'UPDATE_TOO_LARGE', `the update is over ${maxBytes} bytes`)
  }
  const chunks: Buffer[] = []
  let length = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    length += chunk.length
    if (length > maxBytes) {
      request.destroy()
      throw new ApiRefusal(413, 'UPDATE_TOO_LARGE', `the update is over ${maxBytes} bytes`)
    }
    chunks.push(chunk)
  }
  return new Uint8Array(Buffer.concat(chunks))
}
