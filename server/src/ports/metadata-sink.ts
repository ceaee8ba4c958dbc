/** What the server reports about itself for the operators' dashboard. */
export type MetadataEvent =
  | { type: 'room-loaded'; room: string; bytes: number }
  | { type: 'room-unloaded'; room: string; bytes: number }
  | { type: 'connection-opened'; room: string; connectionId: string; userId: string }
  | { type: 'connection-closed'; room: string; connectionId: string }

/**
 * Metadata about rooms and connections. `record` is called on the hot path, so adapters must
 * only queue the event and write it later; it never throws and never waits.
 */
export interface MetadataSink {
  record(event: MetadataEvent): void
  close(): Promise<void>
}
