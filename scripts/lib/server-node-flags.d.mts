/** Types for server-node-flags.mjs, for the bench, which starts the server as `npm start` does. */
export const SERVER_NODE_FLAGS: readonly string[]
export function serverNodeFlags(nodeOptions?: string): readonly string[]
