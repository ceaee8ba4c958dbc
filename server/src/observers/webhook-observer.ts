import type { ServerEvents } from '../core/server-events.js'
import { NO_ROOM_EVENTS, type RoomEventSink } from '../ports/room-events.js'

/**
 * Sends the webhooks' events (`RoomEvent`). Only changes made on this server count: a peer's
 * server sends its own, so a change is sent once in a cluster.
 */
export function observeWebhooks(events: ServerEvents, sink: RoomEventSink): void {
  // No webhook: listen for nothing, so a change builds no event (see `EventStream.listens`).
  if (sink === NO_ROOM_EVENTS) return
  events.on('document.changed', ({ room, origin, at }) => {
    if (origin.kind !== 'peer') sink.emit({ type: 'document.updated', room, at })
  })
  events.on('connection.joined', ({ room, connectionId, userId, name, at }) =>
    sink.emit({ type: 'user.joined', room, connectionId, userId, name, at }),
  )
  events.on('connection.left', ({ room, connectionId, userId, name, at }) =>
    sink.emit({ type: 'user.left', room, connectionId, userId, name, at }),
  )
  events.on('room.deleted', ({ room, at }) => sink.emit({ type: 'room.deleted', room, at }))
  events.on('document.restored', ({ room, version, at }) =>
    sink.emit({ type: 'document.restored', room, version, at }),
  )
}
