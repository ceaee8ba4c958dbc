/**
 * Which metadata rows are live, shared by every reader of the metadata tables (the REST API's
 * room listing here, the dashboard through `@symphony/server/metadata-sql`), so both count a
 * room's connections the same way.
 */

/** A server whose heartbeat is older than this is gone, and its sessions are not counted. */
export const LIVE_WITHIN_SECONDS = 30

/** Whether the server row `alias` has sent a heartbeat recently. */
export const IS_LIVE = (alias: string): string =>
  `${alias}.last_heartbeat_at > now() - interval '${LIVE_WITHIN_SECONDS} seconds'`

/**
 * Open sessions on servers that are still alive (a crashed server leaves its sessions open), as
 * `s`; ends in its WHERE clause, so a caller may add `AND …`.
 */
export const LIVE_SESSIONS = `
  SELECT s.* FROM connection_sessions s JOIN servers v ON v.id = s.server_id
  WHERE s.closed_at IS NULL AND ${IS_LIVE('v')}`
