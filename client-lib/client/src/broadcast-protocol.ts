/**
 * Broadcast events: ephemeral JSON messages from one client to everyone else in the room, on
 * every server, never stored. An extension of the y-websocket protocol, opt-in like the
 * sync-status message: a client that adds `?broadcast=1` to its URL receives them (and may send
 * them); plain y-websocket providers never see one.
 *
 * Frame: `varUint(MESSAGE_BROADCAST) varUint8Array(JSON text in UTF-8)`, at most the server's
 * presence limit (`MAX_PRESENCE_BYTES`, 16 KiB by default), and counted by its message rate limit.
 */
export const MESSAGE_BROADCAST = 103

/** The query parameter by which a client asks to receive broadcast events. */
export const BROADCAST_PARAM = 'broadcast'
