import type { Pool } from 'pg'

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
      CREATE TABLE server_samples (
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
      CREATE INDEX server_samples_at ON server_samples (at);
      CREATE INDEX connection_sessions_server_id ON connection_sessions (server_id);
      CREATE INDEX connection_sessions_closed_at ON connection_sessions (closed_at) WHERE closed_at IS NOT NULL;
    `,
  },
]

/** Any constant: every server migrating at once takes turns on it. */
const MIGRATION_LOCK = 7_230_411

/**
 * Brings the schema up to date in one transaction, under an advisory lock so that servers
 * starting together do not race. Returns the versions it applied.
 */
export async function migrate(pool: Pool): Promise<number[]> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => row.version))
    const applied: number[] = []
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(migration.version)
    }
    await client.query('COMMIT')
    return applied
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}
