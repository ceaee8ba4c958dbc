/** Durable storage of each room's full document state, as one Yjs update. */
export interface SnapshotStore {
  /** The room's last saved state, or `null` if it was never saved. Throws if the store fails. */
  load(room: string): Promise<Uint8Array | null>
  /** Replaces the room's saved state; resolves only once it is durable. */
  save(room: string, state: Uint8Array): Promise<void>
  close(): Promise<void>
}
