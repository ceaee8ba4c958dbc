import type { RoomHold, RoomManager } from '../core/room-manager.js'
import { ServerBusyError } from '../errors.js'
import { ApiRefusal } from './api-refusal.js'

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
