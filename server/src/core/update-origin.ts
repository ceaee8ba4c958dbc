import type { RoomMember } from './room-member.js'

/** What the client ids of REST API writes are bound to (the API has no token subject; no token may carry this one). */
export const API_SUBJECT = 'symphony:api'

/**
 * Who an update applied through `Room.applyUpdate` comes from: the REST API (or an embedder), or a
 * restore. Both write as no connection, under `API_SUBJECT`, with every check a client's update gets.
 */
export type ApiOrigin = { readonly kind: 'rest' } | { readonly kind: 'restore'; readonly version: string }

/**
 * What the checks of a write need of its writer: whom its client ids are bound to, and whether it
 * may write; a connection also has its `id`, a write of the REST API or a restore its `origin`.
 */
export type Writer = Pick<RoomMember, 'identity' | 'canWrite'> &
  Partial<Pick<RoomMember, 'pacedAs'>> & {
    readonly id?: string
    readonly origin?: ApiOrigin
  }

/** The writer of the REST API's (or a restore's) updates: its client ids are bound to `API_SUBJECT`. */
export function apiWriter(origin: ApiOrigin): Writer {
  return { identity: { userId: API_SUBJECT, name: null }, canWrite: true, origin }
}

/** One write on its way into a room: who sent it, its update, and the frame that carried it. */
export interface Write {
  writer: Writer
  update: Uint8Array
  /** The update frame it came in, forwarded as it is; null: encoded when forwarded (a sync step 2, the REST API). */
  frame: Uint8Array | null
  receivedAt: number
}

/** A write of the REST API's (or a restore's), arriving now. */
export function apiWrite(origin: ApiOrigin, update: Uint8Array): Write {
  return { writer: apiWriter(origin), update, frame: null, receivedAt: performance.now() }
}
