import type { Pool } from 'pg'

/** A server whose heartbeat is older than this is shown as gone, and its sessions are not counted. */
export const LIVE_WITHIN_SECONDS = 30

/** Whether the server row `alias` has sent a heartbeat recently. */
const IS_LIVE = (alias: string) =>
  `${alias}.last_heartbeat_at > now() - interval '${LIVE_WITHIN_SECONDS} seconds'`

/** Open sessions on servers that are still alive (a crashed server leaves its sessions open). */
const LIVE_SESSIONS = `
  SELECT s.* FROM connection_sessions s JOIN servers v ON v.id = s.server_id
  WHERE s.closed_at IS NULL AND ${IS_LIVE('v')}`

/** Whether a live server holds the room now (rooms.active may lag when servers hand a room over). */
const HELD_LIVE = (room: string) => `EXISTS (
  SELECT 1 FROM room_holders h JOIN servers v ON v.id = h.server_id
  WHERE h.room = ${room} AND ${IS_LIVE('v')})`

export const ROOM_SORTS = ['name', 'connections', 'bytes', 'lastActive'] as const
export type RoomSort = (typeof ROOM_SORTS)[number]
const SORT_SQL: Record<RoomSort, string> = {
  name: 'r.name ASC',
  connections: 'connections DESC, r.name ASC',
  bytes: 'r.bytes DESC, r.name ASC',
  lastActive: 'r.last_active_at DESC, r.name ASC',
}

/** The read side of the metadata tables, as the dashboard API shows it. */
export class MetadataQueries {
  constructor(private readonly pool: Pool) {}

  async servers() {
    const { rows } = await this.pool.query(`
      SELECT v.id, v.address, v.started_at AS "startedAt", v.last_heartbeat_at AS "lastHeartbeatAt",
        ${IS_LIVE('v')} AS live,
        (SELECT count(*)::int FROM connection_sessions s WHERE s.server_id = v.id AND s.closed_at IS NULL) AS connections,
        (SELECT count(*)::int FROM room_holders h WHERE h.server_id = v.id) AS rooms
      FROM servers v ORDER BY v.id`)
    return rows
  }

  async rooms(options: { q: string; sort: RoomSort; limit: number; offset: number }) {
    const pattern = `%${options.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    const { rows } = await this.pool.query(
      `WITH live AS (${LIVE_SESSIONS})
       SELECT r.name, r.bytes::float8 AS bytes, ${HELD_LIVE('r.name')} AS active, r.last_active_at AS "lastActiveAt",
         (SELECT count(*)::int FROM live WHERE live.room = r.name) AS connections,
         count(*) OVER ()::int AS total
       FROM rooms r WHERE r.name ILIKE $1
       ORDER BY ${SORT_SQL[options.sort]} LIMIT $2 OFFSET $3`,
      [pattern, options.limit, options.offset],
    )
    const total = rows[0]?.total ?? 0
    return { total, rooms: rows.map(({ total: _, ...room }) => room) }
  }

  async room(name: string) {
    const { rows } = await this.pool.query(
      `SELECT name, bytes::float8 AS bytes, ${HELD_LIVE('rooms.name')} AS active, last_active_at AS "lastActiveAt"
       FROM rooms WHERE name = $1`,
      [name],
    )
    const room = rows[0]
    if (!room) return null
    const [connections, holders, history] = await Promise.all([
      this.pool.query(
        `WITH live AS (${LIVE_SESSIONS})
         SELECT id, server_id AS "serverId", user_id AS "userId", user_name AS "userName",
                user_info AS "userInfo", opened_at AS "openedAt" FROM live
         WHERE room = $1 ORDER BY opened_at`,
        [name],
      ),
      this.pool.query(
        `SELECT h.server_id AS "serverId", v.address, h.since FROM room_holders h
         JOIN servers v ON v.id = h.server_id WHERE h.room = $1 ORDER BY h.server_id`,
        [name],
      ),
      this.pool.query(
        // Each server samples its own connections: the room's count is their sum, per minute.
        `WITH per_server AS (
           SELECT date_trunc('minute', at) AS at, server_id, max(connections) AS connections, max(bytes) AS bytes
           FROM room_samples WHERE room = $1 AND at > now() - interval '24 hours' GROUP BY 1, 2)
         SELECT at, sum(connections)::int AS connections, max(bytes)::float8 AS bytes
         FROM per_server GROUP BY at ORDER BY at`,
        [name],
      ),
    ])
    return { ...room, connections: connections.rows, servers: holders.rows, history: history.rows }
  }

  /** Internal addresses of every live sync server. */
  async liveServers(): Promise<string[]> {
    const { rows } = await this.pool.query<{ address: string }>(
      `SELECT v.address FROM servers v WHERE ${IS_LIVE('v')} ORDER BY v.last_heartbeat_at DESC`,
    )
    return rows.map((row) => row.address)
  }

  /** Internal addresses of the live servers holding `room`. */
  async liveHolders(room: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ address: string }>(
      `SELECT v.address FROM room_holders h JOIN servers v ON v.id = h.server_id
       WHERE h.room = $1 AND ${IS_LIVE('v')}`,
      [room],
    )
    return rows.map((row) => row.address)
  }

  /** Live connection counts of `rooms`, or of the 100 busiest rooms when `rooms` is null. */
  async connectionCounts(rooms: string[] | null): Promise<{ room: string; connections: number }[]> {
    const { rows } = await this.pool.query(
      `WITH live AS (${LIVE_SESSIONS})
       SELECT r.name AS room, (SELECT count(*)::int FROM live WHERE live.room = r.name) AS connections
       FROM rooms r WHERE $1::text[] IS NULL OR r.name = ANY($1)
       ORDER BY connections DESC, r.name LIMIT 100`,
      [rooms],
    )
    return rows
  }

  async stats() {
    const [totals, series] = await Promise.all([
      this.pool.query(`
        WITH live AS (${LIVE_SESSIONS})
        SELECT
          (SELECT count(*)::int FROM servers v WHERE ${IS_LIVE('v')}) AS servers,
          (SELECT count(*)::int FROM rooms r WHERE ${HELD_LIVE('r.name')}) AS "activeRooms",
          (SELECT count(*)::int FROM rooms) AS rooms,
          (SELECT count(*)::int FROM live) AS connections,
          (SELECT coalesce(sum(bytes), 0)::float8 FROM rooms) AS bytes`),
      this.pool.query(`
        WITH per_server AS (
          SELECT date_trunc('minute', at) AS at, room, server_id, max(connections) AS connections, max(bytes) AS bytes
          FROM room_samples WHERE at > now() - interval '24 hours' GROUP BY 1, 2, 3),
        per_room AS (
          SELECT at, room, sum(connections) AS connections, max(bytes) AS bytes FROM per_server GROUP BY 1, 2)
        SELECT at, sum(connections)::int AS connections, sum(bytes)::float8 AS bytes, count(*)::int AS rooms
        FROM per_room GROUP BY at ORDER BY at`),
    ])
    return { totals: totals.rows[0], series: series.rows }
  }
}
