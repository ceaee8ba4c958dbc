import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { internalAuthorization } from '@symphony/client/wire'
import type { RoomOwner } from '../ports/room-registry.js'

/** Marks a request one server sent on to a room's owner: the owner serves it, never sends it on. */
export const FORWARDED_HEADER = 'x-symphony-forwarded'

/** With the relay (one copy per room): where each room is served, and how a request reaches its owner. */
export interface RoomOwners {
  /** The room's owner if another server owns it; null when it is (or now will be) served here. */
  ownerElsewhere(name: string): Promise<RoomOwner | null>
  /** Sends `request` on to `owner`'s internal port at `target` (path and query); see `forwardToOwner`. */
  forward(request: IncomingMessage, response: ServerResponse, owner: RoomOwner, target: string): Promise<void>
}

export interface RoomOwnersOptions {
  ownerElsewhere(name: string): Promise<RoomOwner | null>
  /** `INTERNAL_TOKEN`, which the owner's internal port asks for. */
  token: string
  /** How long an owner may stay silent on a forwarded request (it may load, then wait for a save). */
  idleTimeoutMs: number
}

export function roomOwners({ ownerElsewhere, token, idleTimeoutMs }: RoomOwnersOptions): RoomOwners {
  return {
    ownerElsewhere,
    forward: (request, response, owner, target) =>
      forwardToOwner(request, response, { address: owner.internalAddress, target, token, idleTimeoutMs }),
  }
}

interface OwnerForward {
  /** The owner's internal address (`host:port`). */
  address: string
  /** The path on the owner's internal port, with its query. */
  target: string
  token: string
  idleTimeoutMs: number
}

/** The request's headers an owner needs: what the body is. Its authorization is the internal token. */
const PASSED_HEADERS = ['content-type', 'content-length'] as const

/**
 * Sends an HTTP request on to the room's owner and streams its answer back, status and body as
 * the owner gives them (nothing buffered here, whatever their size). Rejects, having answered
 * nothing, when the owner cannot be reached or stays silent; once its answer has begun, a failure
 * cuts the response short instead.
 */
function forwardToOwner(
  request: IncomingMessage,
  response: ServerResponse,
  { address, target, token, idleTimeoutMs }: OwnerForward,
): Promise<void> {
  const colon = address.lastIndexOf(':')
  const headers: Record<string, string> = {
    authorization: internalAuthorization(token),
    [FORWARDED_HEADER]: '1',
  }
  for (const name of PASSED_HEADERS) {
    const value = request.headers[name]
    if (value) headers[name] = value
  }
  return new Promise((resolve, reject) => {
    const upstream = httpRequest({
      host: address.slice(0, colon),
      port: Number(address.slice(colon + 1)),
      path: target,
      method: request.method,
      headers,
      timeout: idleTimeoutMs,
    })
    upstream.on('timeout', () => upstream.destroy(new Error(`the room's owner at ${address} did not answer`)))
    upstream.on('error', reject) // after the answer began, this settles nothing: the pipeline ends it
    upstream.on('response', (answer) => {
      const passed: Record<string, string> = {}
      for (const name of PASSED_HEADERS) {
        const value = answer.headers[name]
        if (value) passed[name] = value
      }
      response.writeHead(answer.statusCode ?? 502, passed)
      pipeline(answer, response).then(resolve, () => resolve()) // a caller gone is no one to tell
    })
    pipeline(request, upstream).catch(() => {}) // the request body; a failure shows as upstream's error
  })
}
