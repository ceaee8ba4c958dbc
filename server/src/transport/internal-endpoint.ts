import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  internalAuthorization,
  isValidRoomName,
  parseInternalRoomPath,
  parseInternalVersionPath,
} from '@symphony/client/wire'
import type { Room } from '../core/room.js'
import { toRefusal } from './api-refusal.js'
import { FORWARDED_HEADER, type RoomOwners } from './owner-forward.js'
import { parseRequestTarget } from './request-target.js'
import { type ApiHandler, FORWARDED_API_PREFIX } from './rest-api.js'
import type { VersionsRoute } from './versions-route.js'

export interface InternalEndpointDeps {
  token: string
  /** The room loaded here and its incarnation, if it is. */
  loadedIncarnation(name: string): { room: Room; generation: number } | undefined
  /** A peer learned from the store that this server's incarnation of the room was deleted. */
  dropDeleted(name: string, generation: number): void
  /** Deletes a room everywhere (the dashboard's Delete). */
  deleteRoom(name: string): Promise<void>
  /** A saved version's restore (the dashboard's Restore): `POST …/versions/{id}/restore` only. */
  versions: VersionsRoute
  /** The REST API, for requests another server sent on to this room's owner (`/internal/api/…`). */
  api: ApiHandler | null
  /** A restore or a deletion of a room another server owns is sent on to it. */
  owners?: RoomOwners
}

/**
 * The server-to-server endpoint (paths and token: `@symphony/client/wire`'s http-paths):
 * a loaded room's full state for a peer loading it, and deletion and a version's restore for the
 * dashboard (answered as the REST API answers them).
 */
export function createInternalEndpoint({
  token,
  loadedIncarnation,
  dropDeleted,
  deleteRoom,
  versions,
  api,
  owners,
}: InternalEndpointDeps) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    if (!hasInternalToken(request, token)) {
      response.writeHead(401).end()
      return
    }
    const { path, query } = parseRequestTarget(request.url)
    if (path.startsWith(`${FORWARDED_API_PREFIX}/api/`)) {
      if (api) api(request, response, path.slice(FORWARDED_API_PREFIX.length), query, 'forwarded')
      else response.writeHead(404).end()
      return
    }
    // A restore or a deletion writes to the room: its owner does it, here when this server owns
    // it (or another server sent it on), else sent on to the owner.
    const atOwner = (room: string, serve: () => Promise<void>) => {
      const owner = request.headers[FORWARDED_HEADER] || !owners ? null : owners.ownerElsewhere(room)
      void Promise.resolve(owner)
        .then((elsewhere) =>
          elsewhere ? owners?.forward(request, response, elsewhere, request.url ?? path) : serve(),
        )
        .catch((error: unknown) => {
          const { status, code, message } = toRefusal(error)
          sendJson(response, status, { error: { code, message } })
        })
    }
    const version = parseInternalVersionPath(path)
    if (version?.part === 'restore' && request.method === 'POST' && isValidRoomName(version.room)) {
      const target = { ...version, room: version.room }
      atOwner(target.room, () =>
        versions('POST', target, query).then((reply) => {
          if ('jsonText' in reply)
            response.writeHead(reply.status, { 'Content-Type': 'application/json' }).end(reply.jsonText)
          else sendJson(response, reply.status, reply.json)
        }),
      )
      return
    }
    const target = parseInternalRoomPath(path)
    const name = target && isValidRoomName(target.room) ? target.room : null
    if (name && request.method === 'DELETE' && target?.part === '') {
      atOwner(name, () => deleteRoom(name).then(() => void response.writeHead(204).end()))
      return
    }
    if (request.method !== 'GET' || target?.part !== 'state' || !name) {
      response.writeHead(404).end()
      return
    }
    const loaded = loadedIncarnation(name)
    if (!loaded) {
      response.writeHead(404).end() // not held here (any more): the caller tries the next peer
      return
    }
    // The caller read the current incarnation from the store: an older one here was deleted
    // while this server missed it (410, and it goes); a newer one means the caller is behind (409).
    const wanted = Number(query.get('generation') ?? loaded.generation)
    if (wanted !== loaded.generation) {
      if (Number.isSafeInteger(wanted) && wanted > loaded.generation) dropDeleted(name, loaded.generation)
      response.writeHead(wanted > loaded.generation ? 410 : 409).end()
      return
    }
    const state = loaded.room.encodeState() // encoded once per version, shared with joiners and snapshots
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': state.length })
    response.end(state)
  }
}

/** Whether the request carries `Authorization: Bearer <INTERNAL_TOKEN>` (compared in constant time). */
export function hasInternalToken(request: IncomingMessage, token: string): boolean {
  const expected = Buffer.from(internalAuthorization(token))
  const presented = Buffer.from(request.headers.authorization ?? '')
  return presented.length === expected.length && timingSafeEqual(presented, expected)
}

function sendJson(response: ServerResponse, status: number, json: unknown): void {
  response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(json))
}
