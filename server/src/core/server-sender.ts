import type { EventSender } from '@symphony/client/wire'
import { API_SUBJECT } from './update-origin.js'

/**
 * The sender the server stamps on the broadcast events it sends itself (`server.room(name)
 * .broadcast`, an app message handler's `broadcast`): `symphony:api`, which no client's event
 * carries, so clients can tell the server's events from their peers'.
 */
export function serverSender(serverId: string): EventSender {
  return { connectionId: `${serverId}:server`, userId: API_SUBJECT, name: null }
}
