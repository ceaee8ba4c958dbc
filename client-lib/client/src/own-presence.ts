import * as bc from 'lib0/broadcastchannel'
import * as encoding from 'lib0/encoding'
import { type Awareness, encodeAwarenessUpdate } from 'y-protocols/awareness'
import type { WebsocketProvider } from 'y-websocket'
import { MessageType } from './wire/message-types.js'

type Changes = { added: number[]; updated: number[]; removed: number[] }

/**
 * Makes `provider` send only this client's own presence to the server. y-websocket sends every
 * awareness change over the socket, the other users' too: an echo of each state the server sent
 * (every client, for every cursor move of every other), and the states of other tabs it hears
 * over the BroadcastChannel, which would make this connection speak for their client ids (the
 * server lets a connection introduce eight, and holds back another user's first edit under an id
 * some connection's presence speaks for). The server relays each client's own. Other tabs still
 * hear everything, as y-websocket sends it.
 */
export function sendOwnPresenceOnly(provider: WebsocketProvider, awareness: Awareness): void {
  awareness.off('update', provider._awarenessUpdateHandler)
  provider._awarenessUpdateHandler = ({ added, updated, removed }: Changes) => {
    const changed = [...added, ...updated, ...removed]
    const ws = provider.ws
    if (changed.includes(awareness.clientID) && provider.wsconnected && ws?.readyState === 1) {
      ws.send(awarenessFrame(awareness, [awareness.clientID]))
    }
    if (provider.bcconnected) bc.publish(provider.bcChannel, awarenessFrame(awareness, changed), provider)
  }
  awareness.on('update', provider._awarenessUpdateHandler)
}

function awarenessFrame(awareness: Awareness, clients: number[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MessageType.Awareness)
  encoding.writeVarUint8Array(encoder, encodeAwarenessUpdate(awareness, clients))
  return encoding.toUint8Array(encoder)
}
