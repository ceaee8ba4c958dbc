import { internalAuthorization, internalRoomPath } from '@symphony/client/wire'
import type { PeerStateFetcher } from '../core/room-state-source.js'

/** Fetches a room's state from a peer's internal endpoint, giving up after `timeoutMs`. */
export function createPeerStateFetcher(token: string, timeoutMs: number): PeerStateFetcher {
  return async (peer, room, generation) => {
    const path = `${internalRoomPath(room, 'state')}?generation=${generation}`
    const response = await fetch(`http://${peer.internalAddress}${path}`, {
      headers: { authorization: internalAuthorization(token) },
      signal: AbortSignal.timeout(timeoutMs),
    })
    if (response.status !== 200) {
      await response.body?.cancel() // frees the socket for the next request
      throw new Error(`peer ${peer.serverId} answered ${response.status}`)
    }
    return new Uint8Array(await response.arrayBuffer())
  }
}
