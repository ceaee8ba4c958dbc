import type { Pool, QueryConfig } from 'pg'

/** One schema change. Append new ones; never edit one that has shipped. */
interface Migration {
  version: number
  name: string
  sql: string
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'servers, rooms, sessions and samples',
    sql: `
      CREATE TABLE servers (
        id text PRIMARY KEY,
        address text NOT NULL,
        started_at timestamptz NOT NULL,
        last_heartbeat_at timestamptz NOT NULL
      );
      CREATE TABLE rooms (
        name text PRIMARY KEY,
        bytes bigint NOT NULL DEFAULT 0,
        active boolean NOT NULL DEFAULT false,
        last_active_at timestamptz NOT NULL
      );
      -- Which servers hold a room now; rooms.active is derived from it.
      CREATE TABLE room_holders (
        room text NOT NULL,
        server_id text NOT NULL,
        since timestamptz NOT NULL,
        PRIMARY KEY (room, server_id)
      );
      CREATE TABLE connection_sessions (
        id text PRIMARY KEY,
        room text NOT NULL,
        server_id text NOT NULL,
        user_id text NOT NULL,
        opened_at timestamptz NOT NULL,
        closed_at timestamptz
      );
      CREATE INDEX connection_sessions_open ON connection_sessions (room) WHERE closed_at IS NULL;
      CREATE TABLE room_samples (
        room text NOT NULL,
        server_id text NOT NULL,
        at timestamptz NOT NULL,
        connections integer NOT NULL,
        bytes bigint NOT NULL,
        PRIMARY KEY (room, server_id, at)
      );
      CREATE INDEX room_samples_at ON room_samples (at);
    `,
  },
  {
    version: 2,
    name: 'who a session is: the token name and info',
    sql: `
      ALTER TABLE connection_sessions ADD COLUMN user_name text, ADD COLUMN user_info jsonb;
    `,
  },
  {
    version: 3,
    name: 'server samples, and indexes for the dashboard and retention',
    sql: `
      -- One row per server per sample interval: its load then, and what it did since the previous row.
      CREATE TABLE IF NOT EXISTS server_samples (
        server_id text NOT NULL,
        at timestamptz NOT NULL,
        seconds real NOT NULL,
        cpu real NOT NULL,
        rss_bytes bigint NOT NULL,
        heap_bytes bigint NOT NULL,
        connections integer NOT NULL,
        rooms integer NOT NULL,
        messages_in bigint NOT NULL,
        messages_out bigint NOT NULL,
        bytes_in bigint NOT NULL,
        bytes_out bigint NOT NULL,
        errors integer NOT NULL,
        PRIMARY KEY (server_id, at)
      );
      CREATE INDEX IF NOT EXISTS server_samples_at ON server_samples (at);
      CREATE INDEX IF NOT EXISTS connection_sessions_server_id ON connection_sessions (server_id);
      CREATE INDEX IF NOT EXISTS connection_sessions_closed_at ON connection_sessions (closed_at) WHERE closed_at IS NOT NULL;
    `,
  },
  {
    version: 4,
    name: 'the room listing: when a room last changed, and names in code point order',
    sql: `
      ALTER TABLE rooms ADD COLUMN IF NOT EXISTS changed_at timestamptz;
      -- The listing pages by name in byte order (UTF-8: code point order), whatever the database's
      -- collation, so a page is a range of this index.
      CREATE INDEX IF NOT EXISTS rooms_name_c ON rooms (name COLLATE "C");
    `,
  },
]

/** Any constant: every server migrating at once takes turns on it. */
const MIGRATION_LOCK = 7_230_411
/** How long a migration's statement may run (an index build on a large table), and wait for a lock. */
const MIGRATION_TIMEOUT_MS = 10 * 60_000
const LOCK_TIMEOUT_MS = 60_000

/**
 * Brings the schema up to date in one transaction, under an advisory lock so that servers
 * starting together do not race. Returns the versions it applied.
 */
export async function migrate(
  pool: Pool,
  timeouts: { statementMs: number; lockMs: number } = {
    statementMs: MIGRATION_TIMEOUT_MS,
    lockMs: LOCK_TIMEOUT_MS,
  },
): Promise<number[]> {
  const client = await pool.connect()
  // A migration may build an index on a year of rows, or wait for another server's write: past the
  // pool's 10 s read timeout, yet bounded (lock waits fail at the server, which aborts the transaction).
  // (pg reads a query's own `query_timeout`; its types leave it out.)
  const query = (text: string, values?: unknown[]) =>
    client.query<{ version: number }>({ text, values, query_timeout: timeouts.statementMs } as QueryConfig)
  let failure: Error | undefined
  try {
    await query('BEGIN')
    await query(`SET LOCAL lock_timeout = '${Math.round(timeouts.lockMs)}ms'`)
    await query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await query('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => row.version))
    const applied: number[] = []
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue
      await query(migration.sql)
      await query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(migration.version)
    }
    await query('COMMIT')
    return applied
  } catch (error) {
    failure = error as Error
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    // After a failure the connection is dropped, never pooled: a statement the client gave up on
    // may still hold the transaction open, and the next borrower's COMMIT would commit half of it.
    client.release(failure)
  }
}
