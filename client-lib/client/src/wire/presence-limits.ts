/**
 * The server's default for `MAX_PRESENCE_BYTES`: the largest presence (awareness) state, as JSON
 * in UTF-8, one client may set. A bigger state closes the connection with 1009. Broadcast events
 * are capped the same.
 *
 * @example
 * const fits = new TextEncoder().encode(JSON.stringify(state)).length <= DEFAULT_MAX_PRESENCE_BYTES
 */
export const DEFAULT_MAX_PRESENCE_BYTES = 16 * 1024
