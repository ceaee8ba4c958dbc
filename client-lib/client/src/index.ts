/**
 * @symphony/client: rooms of shared Yjs types on a Symphony server, with presence, per-user
 * undo, an offline store and reconnects handled.
 *
 * @example
 * import { createClient } from '@symphony/client'
 * const room = createClient({ url: 'wss://sync.example.com', token }).enter('board-1')
 * room.map('shapes').set('a', { x: 1, y: 2 })
 */
export { type AccessVerdict, checkAccess } from './access-check.js'
export { type ClientOptions, createClient, SymphonyClient } from './client.js'
export { AuthDeniedError, type ClientErrorCode, SymphonyClientError } from './errors.js'
export type { History, SharedType } from './history.js'
export { type Peer, Presence } from './presence.js'
export { type ReconnectOptions, ReconnectSchedule } from './reconnect-schedule.js'
export { Room, type RoomEvents, type SyncStatus } from './room.js'
export type { RoomStatus } from './room-connection.js'
export {
  CloseCode,
  type CloseCodeName,
  type CloseCodeValue,
  closeCodeName,
  shouldBackOff,
  shouldReconnect,
} from './wire/close-codes.js'
export type { EventSender } from './wire/event-sender.js'
export {
  isValidRoomName,
  ROOM_NAME_PATTERN,
  ROOM_NAME_RULE,
  roomFromPath,
  roomPath,
} from './wire/room-name.js'
