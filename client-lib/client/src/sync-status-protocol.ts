/**
 * Sync-status messages: how a client learns that the server holds its edits, an extension of the
 * y-websocket protocol shared by server and client.
 *
 * - A client opts in with `?syncStatus=1` on the WebSocket URL. Only then does the server send the
 *   announcement (a sync-status message with an empty payload), so plain y-websocket providers,
 *   which log every unknown message type, never see one.
 * - After the announcement, the client may send a sync-status message with a small opaque payload
 *   after its updates. The server answers with the same payload once every frame the client sent
 *   before it is applied and handed to the journal. A connection whose writes were refused
 *   (read-only) is never answered: its edits are not held by the server.
 *
 * Frame: `varUint(MESSAGE_SYNC_STATUS) varUint8Array(payload)`, payload at most
 * `MAX_SYNC_STATUS_PAYLOAD` bytes.
 */

/** The message type, beside y-websocket's 0–3 and clear of the servers' own (100). */
export const MESSAGE_SYNC_STATUS = 102

/** The query parameter by which a client asks for the announcement. */
export const SYNC_STATUS_PARAM = 'syncStatus'

/** The longest payload a server echoes; a longer one is a protocol error. */
export const MAX_SYNC_STATUS_PAYLOAD = 16
