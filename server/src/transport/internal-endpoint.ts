import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isValidRoomName, roomFromPath } from '@symphony/client/room-name'
import type { Room } from '../core/room.js'
import { parseRequestTarget } from './request-target.js'

const ROOM_PATH = /^\/internal\/rooms\/([^/]+)(\/state)?$/

export interface InternalEndpointDeps {
  token: string
  loadedRoom(name: string): Room | undefined
  /** Deletes a room everywhere (the dashboard's Delete). */
  deleteRoom(name: string): Promise<void>
}

/**
 * The server-to-server endpoint: `GET /internal/rooms/<room>/state` (the room percent-encoded) answers a loaded room's full
 * state as one Yjs update, so a peer loading the room gets every update, not a 30 s old snapshot.
 * It listens on its own port, which the load balancer never exposes, and needs the shared token.
 * `DELETE /internal/rooms/<room>` deletes the room, as the REST API does, for the dashboard.
 */
export function createInternalEndpoint({ token, loadedRoom, deleteRoom }: InternalEndpointDeps) {
  const expected = Buffer.from(`Bearer ${token}`)
  return (request: IncomingMessage, response: ServerResponse): void => {
    const presented = Buffer.from(request.headers.authorization ?? '')
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      response.writeHead(401).end()
      return
    }
    const match = ROOM_PATH.exec(parseRequestTarget(request.url).path)
    const name = match?.[1] === undefined ? undefined : roomFromPath(match[1])
    if (name && isValidRoomName(name) && request.method === 'DELETE' && !match?.[2]) {
      deleteRoom(name).then(
        () => response.writeHead(204).end(),
        () => response.writeHead(500).end(),
      )
      return
    }
    if (request.method !== 'GET' || !match?.[2] || !name || !isValidRoomName(name)) {
      response.writeHead(404).end()
      return
    }
    const room = loadedRoom(name)
    if (!room) {
      response.writeHead(404).end() // not held here (any more): the caller tries the next peer
      return
    }
    const state = room.encodeState() // encoded once per version, shared with joiners and snapshots
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': state.length })
    response.end(state)
  }
}
