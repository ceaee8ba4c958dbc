/**
 * What an app embedding the server (`createSyncServer({ hooks })`) plugs into a room's life: each
 * hook is optional, and a server without hooks behaves exactly as one started by `npm start`.
 * The room's events (joined, left, changed, saved…) are one typed stream as well: `server.events`.
 * Guide: docs/embedding.md ("Hooks").
 */
// biome-ignore lint/suspicious/noEmptyInterface: each hook lands in its own change (issue #38)
export interface ServerHooks {}

export const NO_HOOKS: ServerHooks = {}
