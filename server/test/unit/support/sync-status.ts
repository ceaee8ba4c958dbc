import { MessageType } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'

/** A sync-status request with a one-byte payload, as `@symphony/client` sends after its edits. */
export function syncStatus(payload: number): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MessageType.SyncStatus)
  encoding.writeVarUint8Array(encoder, new Uint8Array([payload]))
  return encoding.toUint8Array(encoder)
}

/** The payloads of the sync-status answers the client received, in order. */
export function answered(client: { received: Uint8Array[] }): number[] {
  return client.received.filter((frame) => frame[0] === MessageType.SyncStatus).map((frame) => frame[2] ?? -1)
}
