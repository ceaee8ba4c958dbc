import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { internalAuthorization, isValidRoomName, parseInternalRoomPath } from '@symphony/client/wire'
import type { Room } from '../core/room.js'
import { parseRequestTarget } from './request-target.js'

export interface InternalEndpointDeps {
  token: string
  loadedRoom(name: string): Room | undefined
  /** Deletes a room everywhere (the dashboard's Delete). */
  deleteRoom(name: string): Promise<void>
}

/**
 * The server-to-server endpoint (paths and token: `@symphony/client/wire`'s http-paths):
 * a loaded room's full state for a peer loading it, and deletion for the dashboard.
 */
export function createInternalEndpoint({ token, loadedRoom, deleteRoom }: InternalEndpointDeps) {
  const expected = Buffer.from(internalAuthorization(token))
  return (request: IncomingMessage, response: ServerResponse): void => {
    const presented = Buffer.from(request.headers.authorization ?? '')
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      response.writeHead(401).end()
      return
    }
    const target = parseInternalRoomPath(parseRequestTarget(request.url).path)
    const name = target && isValidRoomName(target.room) ? target.room : null
    if (name && request.method === 'DELETE' && target?.part === '') {
      deleteRoom(name).then(
        () => response.writeHead(204).end(),
        () => response.writeHead(500).end(),
      )
      return
    }
    if (request.method !== 'GET' || target?.part !== 'state' || !name) {
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
