/**
 * The Postgres channel on which the sync servers' metadata sink NOTIFYs after each batch it
 * writes, and on which the dashboard LISTENs for live room counts.
 */
export const METADATA_NOTIFY_CHANNEL = 'symphony_metadata'

/** A notification: which server wrote, what its batch touched. */
export interface MetadataNotification {
  server: string
  /** The rooms the batch touched; null when too many to name in one NOTIFY: re-read them all. */
  rooms: string[] | null
  /** Set when the server wrote this many of its own load samples (the dashboard's charts). */
  samples?: number
}

/** Postgres refuses NOTIFY payloads of 8000 bytes or more; past this, `rooms` becomes null. */
const MAX_PAYLOAD_BYTES = 7_900

/** The NOTIFY payload for `notification`, naming no rooms (null) when they would not fit. */
export function encodeMetadataNotification(notification: MetadataNotification): string {
  const payload = JSON.stringify(notification)
  if (new TextEncoder().encode(payload).length <= MAX_PAYLOAD_BYTES) return payload
  return JSON.stringify({ ...notification, rooms: null })
}

/** The notification a payload holds, or null if it is not one of ours. */
export function decodeMetadataNotification(payload: string | undefined): MetadataNotification | null {
  try {
    const value = JSON.parse(payload ?? '') as Partial<MetadataNotification> | null
    if (typeof value?.server !== 'string') return null
    const rooms = Array.isArray(value.rooms) ? value.rooms.filter((room) => typeof room === 'string') : null
    const samples = typeof value.samples === 'number' ? value.samples : undefined
    return samples === undefined ? { server: value.server, rooms } : { server: value.server, rooms, samples }
  } catch {
    return null
  }
}
