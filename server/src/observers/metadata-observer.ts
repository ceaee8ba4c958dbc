import type { ServerEvents } from '../core/server-events.js'
import type { MetadataSink } from '../ports/metadata-sink.js'

/** Records rooms and connections for the operators' dashboard and the room listing. */
export function observeMetadata(events: ServerEvents, sink: MetadataSink): void {
  events.on('room.loaded', ({ room, bytes }) => sink.record({ type: 'room-loaded', room, bytes }))
  events.on('room.unloaded', ({ room, bytes, changedAt }) =>
    sink.record({ type: 'room-unloaded', room, bytes, changedAt }),
  )
  events.on('room.deleted', ({ room }) => sink.record({ type: 'room-deleted', room }))
  events.on('connection.joined', ({ room, connectionId, userId, name, info }) =>
    sink.record({ type: 'connection-opened', room, connectionId, userId, userName: name, userInfo: info }),
  )
  events.on('connection.left', ({ room, connectionId }) =>
    sink.record({ type: 'connection-closed', room, connectionId }),
  )
}
