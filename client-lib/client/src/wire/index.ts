/**
 * The contract between Symphony's processes, in one module: close codes, message types and
 * wire constants, the token subprotocol, room-name rules and their encoding, HTTP error codes,
 * the internal endpoint and the metadata NOTIFY channel. The server, the client libraries, the
 * dashboard and the load harness import these; none keeps a copy.
 *
 * @example
 * import { CloseCode, roomPath } from '@symphony/client/wire'
 */
export * from './app-messages.js'
export * from './close-codes.js'
export * from './error-codes.js'
export * from './event-sender.js'
export * from './http-paths.js'
export * from './message-types.js'
export * from './metadata-channel.js'
export * from './presence-limits.js'
export * from './room-name.js'
export * from './token-protocol.js'
