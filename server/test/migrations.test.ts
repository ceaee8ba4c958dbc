import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import type { DatabaseConnection } from '../src/adapters/postgres/connect.js'
import { connectDatabase } from '../src/adapters/postgres/connect.js'
import { MIGRATIONS, migrate } from '../src/adapters/postgres/migrations.js'
import { silentLogger } from '../src/logger.js'
import { requireTestServices } from './helpers/services.js'
import { isolatedDatabaseUrl } from './helpers/test-database.js'

/** Migrating a database that other servers are writing to (real Postgres: PGlite has one session). */
describe('metadata migrations on a busy database', () => {
  let db: DatabaseConnection
  // pg_stat_activity lists the whole cluster's sessions, other test files' migrations among them:
  // this file's own are told apart by their application name.
  const application = `migrations-${process.pid}`
  before(async () => {
    const url = new URL(await isolatedDatabaseUrl())
    url.searchParams.set('application_name', application)
    db = await connectDatabase({ kind: 'postgres', url: url.toString() }, silentLogger)
  })
  after(async () => {
    await db.close()
  })

  it('a migration that cannot get its lock fails cleanly, leaves no open transaction, and applies later', async () => {
    assert.deepEqual(
      await migrate(db.pool),
      MIGRATIONS.map((m) => m.version),
    )
    // Back to version 2, as a deployment upgrading from it would be (version 3 indexes connection_sessions).
    await db.pool.query('DROP TABLE server_samples')
    await db.pool.query(
      'DROP INDEX connection_sessions_server_id, connection_sessions_closed_at, rooms_name_c',
    )
    await db.pool.query('ALTER TABLE rooms DROP COLUMN changed_at')
    await db.pool.query('DELETE FROM schema_migrations WHERE version > 2')
    const upgrade = MIGRATIONS.filter((m) => m.version > 2).map((m) => m.version)

    // Another server's write transaction holds connection_sessions while the migration indexes it.
    const [{ search_path: schema }] = (await db.pool.query('SHOW search_path')).rows
    const writer = new pg.Client(requireTestServices().databaseUrl)
    await writer.connect()
    try {
      await writer.query(`SET search_path = ${schema}`)
      await writer.query('BEGIN')
      await writer.query('LOCK TABLE connection_sessions IN ROW EXCLUSIVE MODE')
      await assert.rejects(migrate(db.pool, { statementMs: 30_000, lockMs: 200 }), /lock timeout/)
      // Nothing half-done is left open on a pooled connection for a later write to commit.
      for (let i = 0; i < 3; i++) await db.pool.query('SELECT 1')
      const idle = await writer.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE '%connection_sessions_server_id%' AND application_name = $1",
        [application],
      )
      assert.equal(idle.rows[0].n, 0, 'no connection idle in a transaction')
      const versions = (await db.pool.query('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      )
      assert.deepEqual(versions.sort(), [1, 2], 'the failed migrations are not recorded')
      await writer.query('COMMIT')
    } finally {
      await writer.end()
    }
    assert.deepEqual(await migrate(db.pool), upgrade)
    const tables = await db.pool.query("SELECT to_regclass('server_samples') IS NOT NULL AS present")
    assert.equal(tables.rows[0].present, true)
  })
})
