import type { RoomCatalog } from './room-catalog.js'

/**
 * What the server reports about itself for the operators' dashboard and the room listing.
 * `changedAt` (ms since the epoch): when a client or the REST API last changed the room's
 * document on this server since it loaded there; absent if none did.
 */
export type MetadataEvent =
  | { type: 'room-loaded'; room: string; bytes: number }
  | { type: 'room-unloaded'; room: string; bytes: number; changedAt?: number }
  /** Sampled now and then for every loaded room: the time series behind the dashboard's charts. */
  | { type: 'room-sample'; room: string; connections: number; bytes: number; changedAt?: number }
  | {
      type: 'connection-opened'
      room: string
      connectionId: string
      userId: string
      /** The token's display name and info, for the sessions view. */
      userName: string | null
      userInfo: Record<string, unknown> | null
    }
  | { type: 'connection-closed'; room: string; connectionId: string }
  /** The room was deleted: everything recorded about it goes. */
  | { type: 'room-deleted'; room: string }

/** Queue health, for /metrics. */
export interface MetadataSinkStats {
  /** Events waiting to be written. */
  queued: number
  /** Events dropped since start because the queue was full (a slow or unreachable database). */
  dropped: number
}

/**
 * Metadata about rooms and connections. `record` is called on the hot path, so adapters must
 * only queue the event and write it later; it never throws and never waits.
 */
export interface MetadataSink {
  record(event: MetadataEvent): void
  /** The rooms the store holds, for the REST API's listing; absent when nothing is kept. */
  readonly catalog?: RoomCatalog
  stats(): MetadataSinkStats
  /** Writes what is queued (bounded by the adapter's own timeout), then releases resources. */
  close(): Promise<void>
}

/**
 * A sync server's load now and its running totals since it started, read for the dashboard's
 * per-server charts. The metadata sink turns successive readings into per-interval rows.
 */
export interface ServerSample {
  /** User + system CPU time of the process since it started (`process.cpuUsage()`), in µs. */
  cpuMicros: number
  rssBytes: number
  heapBytes: number
  /** Open WebSocket connections and loaded rooms now. */
  connections: number
  rooms: number
  /** Running totals since the server started. */
  messagesIn: number
  messagesOut: number
  bytesIn: number
  bytesOut: number
  /** See `readServerSample` for what counts as an error. */
  errors: number
}
