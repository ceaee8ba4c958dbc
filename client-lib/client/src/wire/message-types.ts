/**
 * The frames Symphony's processes exchange over WebSockets: y-websocket's message types and
 * Symphony's opt-in extensions.
 *
 * Every frame starts with `varUint(type)`. A sync message then has `varUint(SyncType)` and
 * `varUint8Array(payload)` (y-protocols/sync); the others have `varUint8Array(payload)`.
 */
export const MessageType = {
  /** Sync step 1 (a state vector), step 2 or an update: see `SyncType`. */
  Sync: 0,
  /** Presence (y-protocols/awareness). */
  Awareness: 1,
  /** Permission denied: the server refused this connection's writes (read-only token). */
  Auth: 2,
  /** A client asks for everyone's presence. */
  QueryAwareness: 3,
  /** Symphony's extension: `MESSAGE_SYNC_STATUS`. */
  SyncStatus: 102,
  /** Symphony's extension: `MESSAGE_BROADCAST`. */
  Broadcast: 103,
  /** Symphony's extension: `MESSAGE_INCARNATION`, sent by servers only. */
  Incarnation: 104,
  /** Symphony's extension: `MESSAGE_APP`, the embedding app's own message types. */
  App: 105,
} as const

/** Sub-types of a sync message (y-protocols/sync). */
export const SyncType = { Step1: 0, Step2: 1, Update: 2 } as const

/**
 * Sync-status messages: how a client learns that the server holds its edits.
 *
 * - A client opts in with `?syncStatus=1` on the WebSocket URL. Only then does the server send the
 *   announcement (a sync-status message with an empty payload), so plain y-websocket providers,
 *   which log every unknown message type, never see one.
 * - After the announcement, the client may send a sync-status message with a small opaque payload
 *   after its updates. The server answers with the same payload once every frame the client sent
 *   before it is applied and durable: journaled and confirmed, or held by a saved snapshot (while
 *   the journal fails, the server saves a snapshot at once and answers after it). A connection
 *   whose writes were refused (read-only) is never answered: its edits are not held by the server.
 *
 * Frame: `varUint(MESSAGE_SYNC_STATUS) varUint8Array(payload)`, payload at most
 * `MAX_SYNC_STATUS_PAYLOAD` bytes.
 */
export const MESSAGE_SYNC_STATUS = MessageType.SyncStatus

/** The query parameter by which a client asks for the sync-status announcement. */
export const SYNC_STATUS_PARAM = 'syncStatus'

/** The longest sync-status payload a server echoes; a longer one is a protocol error. */
export const MAX_SYNC_STATUS_PAYLOAD = 16

/**
 * Broadcast events: ephemeral JSON messages from one client to everyone else in the room, on
 * every server, never stored. Opt-in like the sync-status message: a client that adds
 * `?broadcast=1` to its URL receives them (and writers may send them); plain providers never see
 * one.
 *
 * - A client sends `varUint(MESSAGE_BROADCAST) varUint8Array(JSON text in UTF-8)`, at most the
 *   server's presence limit (`MAX_PRESENCE_BYTES`, 16 KiB by default), counted by its message
 *   rate limit. Anything after the payload is a protocol error (1002): a client cannot name a
 *   sender. A read-only connection that sends one is closed with 4403 `ReadOnly`.
 * - The server relays `varUint(MESSAGE_BROADCAST) varUint8Array(the same JSON)
 *   varUint8Array(sender JSON)`, the sender (`EventSender`) stamped by the server the event came
 *   in through; a server relaying the client's room passes the same bytes on. A reader that stops after
 *   the payload (clients from before the sender) still reads the event.
 */
export const MESSAGE_BROADCAST = MessageType.Broadcast

/** The query parameter by which a client asks to receive broadcast events. */
export const BROADCAST_PARAM = 'broadcast'

/**
 * Incarnations: a room deleted and created again under the same name is a new incarnation (0,
 * then one more after each deletion), and an offline copy of the deleted one must not sync its
 * content into the new one.
 *
 * - A client opts in with `?incarnation=<n>`: `n` is the incarnation its copy belongs to, or
 *   `none` for a copy that never synced. Plain providers never send it and are never checked.
 * - A copy of an earlier incarnation is closed with 4404 `RoomDeleted` before it syncs: the client
 *   drops it. Otherwise the server sends, before sync step 1, an incarnation message with the
 *   room's incarnation, for the client to keep with its copy.
 *
 * Frame: `varUint(MESSAGE_INCARNATION) varUint(incarnation)`.
 */
export const MESSAGE_INCARNATION = MessageType.Incarnation

/** The query parameter by which a client names its copy's incarnation (or `none`). */
export const INCARNATION_PARAM = 'incarnation'

/** A client's `?incarnation=` value: a number, `none`, or null when it did not opt in (or sent nonsense). */
export function parseIncarnationParam(value: string | null): number | 'none' | null {
  if (value === 'none') return 'none'
  return value !== null && /^\d{1,9}$/.test(value) ? Number(value) : null
}
