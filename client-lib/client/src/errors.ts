/**
 * What went wrong, for code that handles `room.on('error')`.
 *
 * @example
 * const final: ClientErrorCode[] = ['AUTH_REFUSED', 'CLOSED_BY_SERVER', 'CONNECTION_FAILED']
 */
export type ClientErrorCode =
  /** The server refused the token (HTTP 401/403): `status` and `serverCode` say why. No retries. */
  | 'AUTH_REFUSED'
  /** `getToken` threw or returned no string; retried with backoff. */
  | 'TOKEN_UNAVAILABLE'
  /** The server closed the connection with a code after which retrying cannot help. */
  | 'CLOSED_BY_SERVER'
  /** The browser would not open a WebSocket to the URL at all (e.g. ws:// from an https:// page). */
  | 'CONNECTION_FAILED'
  /**
   * The token grants read-only access: local edits stay local and are not saved by the server,
   * and `broadcast` sends nothing.
   */
  | 'READ_ONLY'
  /** IndexedDB could not be opened; the room works online only. */
  | 'OFFLINE_STORE_FAILED'
  /** The room was left or the client destroyed before it synced. */
  | 'ROOM_LEFT'
  /** The room was deleted on the server; its offline copy here is deleted too. No reconnect. */
  | 'ROOM_DELETED'
  /**
   * A presence (awareness) state was over `maxPresenceBytes`: it was not shared (the server would
   * close the connection for it) and the previous one stays.
   */
  | 'PRESENCE_TOO_BIG'

/**
 * The error a room reports through `room.on('error', cb)` and `whenSynced()` rejections.
 *
 * @example
 * room.on('error', (error) => {
 *   if (error.code === 'AUTH_REFUSED') showLogin(error.message)
 * })
 */
export class SymphonyClientError extends Error {
  override readonly name = 'SymphonyClientError'

  constructor(
    readonly code: ClientErrorCode,
    message: string,
    readonly details: { status?: number; serverCode?: string; closeCode?: number } = {},
  ) {
    super(message)
  }
}
