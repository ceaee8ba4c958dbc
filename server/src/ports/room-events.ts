/**
 * What happens in rooms that an app's backend may want to hear about (webhooks). Each event is
 * emitted by the one server where it happened: a change by the server its client (or the REST
 * API) is connected to, a join or leave by the connection's server, a deletion by the server that
 * was asked. `emit` is called on the hot path: adapters only queue.
 */
export type RoomEvent =
  | { type: 'document.updated'; room: string; at: number }
  | {
      type: 'user.joined'
      room: string
      connectionId: string
      userId: string
      name: string | null
      at: number
    }
  | { type: 'user.left'; room: string; connectionId: string; userId: string; name: string | null; at: number }
  | { type: 'room.deleted'; room: string; at: number }
  /** The room was restored to saved version `version` (the REST API's or the dashboard's restore). */
  | { type: 'document.restored'; room: string; version: string; at: number }

export interface RoomEventSink {
  emit(event: RoomEvent): void
  /** Events held (waiting, in flight or waiting for a retry), and those dropped since start. */
  stats(): { queued: number; dropped: number }
  /** Delivers what is queued (bounded by the adapter's own timeout), then stops. */
  close(): Promise<void>
}

/** The embedded adapter: no webhook configured, nobody to tell. */
export const NO_ROOM_EVENTS: RoomEventSink = {
  emit() {},
  stats: () => ({ queued: 0, dropped: 0 }),
  close: async () => {},
}
