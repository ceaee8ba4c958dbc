/**
 * What went wrong, for code that handles `room.on('error')`.
 *
 * @example
 * const final: ClientErrorCode[] = ['AUTH_DENIED', 'AUTH_REFUSED', 'CLOSED_BY_SERVER', 'CONNECTION_FAILED']
 */
export type ClientErrorCode =
  /** `getToken` threw `AuthDeniedError`: this user may not have a token. No retries. */
  | 'AUTH_DENIED'
  /** The server refused the token (HTTP 401/403): `status` and `serverCode` say why. No retries. */
  | 'AUTH_REFUSED'
  /** `getToken` threw (anything but `AuthDeniedError`) or returned no string; retried with backoff. */
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
   * `room.request`: the server's app answered with an error; `details.serverCode` says which
   * (`MESSAGE_REFUSED` with its reason, `UNKNOWN_MESSAGE_TYPE`, `MESSAGE_FAILED`, `HOOK_TIMEOUT`, `TOO_MANY_MESSAGES`).
   */
  | 'MESSAGE_REFUSED'
  /** `room.request` while the room is not connected: nothing was sent. */
  | 'NOT_CONNECTED'
  /** `room.request`: the connection closed, or the timeout passed, before the reply. */
  | 'NO_REPLY'

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
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/**
 * Thrown by `getToken` to say "refused for good": your backend will not give this user a token
 * (it answered 401 or 403: signed out, not a member). The room stops connecting and reports
 * `AUTH_DENIED` (the thrown error as its `cause`) instead of retrying; `room.reconnect()` tries
 * again, after the user signed in. Anything else `getToken` throws is taken for an outage and
 * retried with backoff (`TOKEN_UNAVAILABLE`).
 *
 * @example
 * const getToken = async () => {
 *   const response = await fetch('/api/symphony-token?room=board-1')
 *   if (response.status === 401 || response.status === 403) throw new AuthDeniedError(await response.text())
 *   if (!response.ok) throw new Error(`token route answered ${response.status}`) // retried
 *   return (await response.json()).token
 * }
 */
export class AuthDeniedError extends Error {
  override readonly name = 'AuthDeniedError'
  readonly code = 'AUTH_DENIED'
}

/**
 * Whether `getToken` refused for good: an `AuthDeniedError`, or one of another copy of this
 * package (a second bundle), known by its name.
 */
export function isAuthDenied(error: unknown): boolean {
  return error instanceof AuthDeniedError || (error instanceof Error && error.name === 'AuthDeniedError')
}
