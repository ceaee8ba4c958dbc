import { IS_LIVE, LIVE_SESSIONS } from '@symphony/server/metadata-sql'
import type { Pool, QueryResult, QueryResultRow } from 'pg'

/** Whether a live server holds the room now (rooms.active may lag when servers hand a room over). */
const HELD_LIVE = (room: string) => `EXISTS (
  SELECT 1 FROM room_holders h JOIN servers v ON v.id = h.server_id
  WHERE h.room = ${room} AND ${IS_LIVE('v')})`

export const ROOM_SORTS = ['name', 'connections', 'bytes', 'lastActive'] as const
export type RoomSort = (typeof ROOM_SORTS)[number]
export type SortOrder = 'asc' | 'desc'
const SORT_COLUMN: Record<RoomSort, string> = {
  name: 'r.name',
  connections: 'connections',
  bytes: 'r.bytes',
  lastActive: 'r.last_active_at',
}
/** Names read A to Z; numbers and times biggest or newest first. */
export const DEFAULT_ORDER: Record<RoomSort, SortOrder> = {
  name: 'asc',
  connections: 'desc',
  bytes: 'desc',
  lastActive: 'desc',
}

/** Points per server a samples answer holds at most: longer ranges are averaged into wider steps. */
export const MAX_POINTS = 600
/** Servers a samples answer covers at most. */
const MAX_SERVERS = 100

/** One step of one server's samples, as the API gives it. */
export interface ServerSamplePoint {
  at: string
  /** Fraction of one core (1 = a core fully busy), averaged over the step. */
  cpu: number
  /** The highest resident set size and V8 heap in the step. */
  rssBytes: number
  heapBytes: number
  connections: number
  rooms: number
  messagesInPerSecond: number
  messagesOutPerSecond: number
  bytesInPerSecond: number
  bytesOutPerSecond: number
  /** Errors in the step (see the server's readServerSample). */
  errors: number
}

/** The read side of the metadata tables, as the dashboard API shows it. */
export class MetadataQueries {
  constructor(
    private readonly pool: Pool,
    /** Told each query's time and whether it failed (the dashboard's /metrics). */
    private readonly observe: (seconds: number, failed: boolean) => void = () => {},
  ) {}

  /** One query on the pool, timed. */
  // biome-ignore lint/suspicious/noExplicitAny: rows are whatever the SQL selects, as with pg's own default
  async #query<R extends QueryResultRow = any>(sql: string, params?: unknown[]): Promise<QueryResult<R>> {
    const started = performance.now()
    let failed = true
    try {
      const result = await this.pool.query<R>(sql, params)
      failed = false
      return result
    } finally {
      this.observe((performance.now() - started) / 1000, failed)
    }
  }

  /**
   * Every server's samples between `since` and `until`, in steps of `stepSeconds` or wider so that
   * no server has more than MAX_POINTS. Steps line up across servers (for one time axis).
   */
  async serverSamples(options: { since: Date; until: Date }) {
    const rangeSeconds = (options.until.getTime() - options.since.getTime()) / 1000
    const stepSeconds = Math.max(10, Math.ceil(rangeSeconds / MAX_POINTS / 10) * 10)
    const { rows } = await this.#query(
      `WITH shown AS (
         SELECT DISTINCT server_id FROM server_samples WHERE at > $1 AND at <= $2 ORDER BY server_id LIMIT ${MAX_SERVERS})
       SELECT s.server_id AS "serverId",
         date_bin(make_interval(secs => $3), s.at, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS at,
         greatest(sum(s.seconds), 0.001)::float8 AS seconds,
         (sum(s.cpu * s.seconds) / greatest(sum(s.seconds), 0.001))::float8 AS cpu,
         max(s.rss_bytes)::float8 AS "rssBytes", max(s.heap_bytes)::float8 AS "heapBytes",
         max(s.connections)::int AS connections, max(s.rooms)::int AS rooms,
         sum(s.messages_in)::float8 AS "messagesIn", sum(s.messages_out)::float8 AS "messagesOut",
         sum(s.bytes_in)::float8 AS "bytesIn", sum(s.bytes_out)::float8 AS "bytesOut",
         sum(s.errors)::int AS errors
       FROM server_samples s JOIN shown USING (server_id)
       WHERE s.at > $1 AND s.at <= $2
       GROUP BY 1, 2 ORDER BY 1, 2`,
      [options.since, options.until, stepSeconds],
    )
    const servers = new Map<string, ServerSamplePoint[]>()
    for (const row of rows) {
      const points = servers.get(row.serverId) ?? []
      servers.set(row.serverId, points)
      points.push({
        at: row.at.toISOString(),
        cpu: row.cpu,
        rssBytes: row.rssBytes,
        heapBytes: row.heapBytes,
        connections: row.connections,
        rooms: row.rooms,
        messagesInPerSecond: row.messagesIn / row.seconds,
        messagesOutPerSecond: row.messagesOut / row.seconds,
        bytesInPerSecond: row.bytesIn / row.seconds,
        bytesOutPerSecond: row.bytesOut / row.seconds,
        errors: row.errors,
      })
    }
    return {
      since: options.since.toISOString(),
      until: options.until.toISOString(),
      stepSeconds,
      servers: [...servers].map(([id, samples]) => ({ id, samples })),
    }
  }

  async servers() {
    const { rows } = await this.#query(`
      SELECT v.id, v.address, v.started_at AS "startedAt", v.last_heartbeat_at AS "lastHeartbeatAt",
        ${IS_LIVE('v')} AS live,
        (SELECT count(*)::int FROM connection_sessions s WHERE s.server_id = v.id AND s.closed_at IS NULL) AS connections,
        (SELECT count(*)::int FROM room_holders h WHERE h.server_id = v.id) AS rooms
      FROM servers v ORDER BY v.id`)
    return rows
  }

  async rooms(options: { q: string; sort: RoomSort; order?: SortOrder; limit: number; offset: number }) {
    const order = (options.order ?? DEFAULT_ORDER[options.sort]) === 'asc' ? 'ASC' : 'DESC'
    const pattern = `%${options.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    const { rows } = await this.#query(
      `WITH live AS (${LIVE_SESSIONS})
       SELECT r.name, r.bytes::float8 AS bytes, ${HELD_LIVE('r.name')} AS active, r.last_active_at AS "lastActiveAt",
         (SELECT count(*)::int FROM live WHERE live.room = r.name) AS connections,
         count(*) OVER ()::int AS total
       FROM rooms r WHERE r.name ILIKE $1
       ORDER BY ${SORT_COLUMN[options.sort]} ${order}, r.name ASC LIMIT $2 OFFSET $3`,
      [pattern, options.limit, options.offset],
    )
    const total = rows[0]?.total ?? 0
    return { total, rooms: rows.map(({ total: _, ...room }) => room) }
  }

  async room(name: string) {
    const { rows } = await this.#query(
      `SELECT name, bytes::float8 AS bytes, ${HELD_LIVE('rooms.name')} AS active, last_active_at AS "lastActiveAt"
       FROM rooms WHERE name = $1`,
      [name],
    )
    const room = rows[0]
    if (!room) return null
    const [connections, holders, history] = await Promise.all([
      this.#query(
        `WITH live AS (${LIVE_SESSIONS})
         SELECT id, server_id AS "serverId", user_id AS "userId", user_name AS "userName",
                user_info AS "userInfo", opened_at AS "openedAt" FROM live
         WHERE room = $1 ORDER BY opened_at`,
        [name],
      ),
      this.#query(
        `SELECT h.server_id AS "serverId", v.address, h.since FROM room_holders h
         JOIN servers v ON v.id = h.server_id WHERE h.room = $1 ORDER BY h.server_id`,
        [name],
      ),
      this.#query(
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
    const { rows } = await this.#query<{ address: string }>(
      `SELECT v.address FROM servers v WHERE ${IS_LIVE('v')} ORDER BY v.last_heartbeat_at DESC`,
    )
    return rows.map((row) => row.address)
  }

  /** Internal addresses of the live servers holding `room`. */
  async liveHolders(room: string): Promise<string[]> {
    const { rows } = await this.#query<{ address: string }>(
      `SELECT v.address FROM room_holders h JOIN servers v ON v.id = h.server_id
       WHERE h.room = $1 AND ${IS_LIVE('v')}`,
      [room],
    )
    return rows.map((row) => row.address)
  }

  /** Live connection counts of `rooms`, or of the 100 busiest rooms when `rooms` is null. */
  async connectionCounts(rooms: string[] | null): Promise<{ room: string; connections: number }[]> {
    const { rows } = await this.#query(
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
      this.#query(`
        WITH live AS (${LIVE_SESSIONS})
        SELECT
          (SELECT count(*)::int FROM servers v WHERE ${IS_LIVE('v')}) AS servers,
          (SELECT count(*)::int FROM rooms r WHERE ${HELD_LIVE('r.name')}) AS "activeRooms",
          (SELECT count(*)::int FROM rooms) AS rooms,
          (SELECT count(*)::int FROM live) AS connections,
          (SELECT coalesce(sum(bytes), 0)::float8 FROM rooms) AS bytes`),
      this.#query(`
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
