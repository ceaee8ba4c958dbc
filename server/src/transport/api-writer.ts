import type { Limits } from '../config.js'
import { API_SUBJECT } from '../core/author-binding.js'
import { Connection, type Transport } from '../core/connection.js'
import type { RoomHold, RoomManager } from '../core/room-manager.js'
import { ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { ServerMetrics } from '../metrics.js'
import { ApiRefusal } from './api-refusal.js'

export interface ApiWriterDeps {
  serverId: string
  limits: Limits
  metrics: ServerMetrics
  logger: Logger
}

/** A socket for the API's writes: nobody listens to what the room would send back. */
const NO_SOCKET: Transport = { send() {}, close() {}, bufferedAmount: 0 }

/**
 * The member the REST API (and a restore) writes to a room as: a connection with no socket,
 * whose client ids are bound to `API_SUBJECT`, so no token subject can write under them.
 */
export function createApiWriter(deps: ApiWriterDeps): (room: string) => Connection {
  return (room) =>
    new Connection({
      id: `${deps.serverId}:api`,
      roomName: room,
      identity: { userId: API_SUBJECT, name: null, info: null, access: 'rw', expiresAt: null },
      transport: NO_SOCKET,
      limits: deps.limits,
      metrics: deps.metrics,
      logger: deps.logger,
    })
}

/**
 * Holds the room (loading it if need be) as a connection would: a slow store delays the load,
 * which retries while anyone waits, and the request waits up to `joinWaitMs` (`JOIN_WAIT_MS`).
 * A load that does not finish by then, or fails, is a 503.
 */
export async function holdForApi(
  manager: Pick<RoomManager, 'acquire'>,
  name: string,
  joinWaitMs: number,
): Promise<RoomHold> {
  try {
    return await manager.acquire(name, AbortSignal.timeout(joinWaitMs))
  } catch (error) {
    if (error instanceof ServerBusyError) throw new ApiRefusal(503, 'SERVER_BUSY', error.message)
    if (error instanceof DOMException && error.name === 'TimeoutError')
      throw new ApiRefusal(503, 'ROOM_UNAVAILABLE', `the room did not load within ${joinWaitMs} ms; retry`)
    throw new ApiRefusal(503, 'ROOM_UNAVAILABLE', `the room could not be loaded: ${(error as Error).message}`)
  }
}
