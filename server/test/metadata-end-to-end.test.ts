import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import pg from 'pg'
import { connectDatabase, type DatabaseConnection } from '../src/adapters/postgres/connect.js'
import { migrate } from '../src/adapters/postgres/migrations.js'
import { silentLogger } from '../src/logger.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { requireTestServices } from './helpers/services.js'
import { testMetadataSink } from './helpers/test-database.js'
import { startTestServer, stopTestServers } from './helpers/test-server.js'

/** A real sync server writing its metadata to real Postgres, driven by real clients. */
describe('metadata from a running server to Postgres', () => {
  let db: DatabaseConnection
  before(async () => {
    db = await connectDatabase({ kind: 'postgres', url: requireTestServices().databaseUrl }, silentLogger)
    await migrate(db.pool) // the sink does it on its first flush; the test reads before that
  })
  after(() => db.close())
  afterEach(async () => {
    destroyClients()
    await stopTestServers()
  })

  it('records sessions, holders and samples while clients come and go, and reports the queue in /metrics', async () => {
    const serverId = `e2e-${process.pid}-${Date.now()}`
    const sink = testMetadataSink(serverId, db.pool)
    const t = await startTestServer({ serverId, adapters: { metadata: sink }, metadataSampleIntervalMs: 50 })
    const room = uniqueRoom('meta')
    const a = await connectSynced(t.wsUrl, room)
    const b = await connectSynced(t.wsUrl, room)
    a.doc.getText('t').insert(0, 'hello')
    const query = async (sql: string) =>
      (await db.pool.query(sql.replaceAll('$room', pg.escapeLiteral(room)))).rows
    const openSessions = async () =>
      (
        await query(
          'SELECT count(*)::int AS n FROM connection_sessions WHERE room = $room AND closed_at IS NULL',
        )
      )[0]?.n
    await eventually(async () => (await openSessions()) === 2, 'two open sessions')
    await eventually(
      async () =>
        (await query('SELECT max(connections) AS n FROM room_samples WHERE room = $room'))[0]?.n === 2,
      'a sample with two connections',
    )
    assert.deepEqual(await query('SELECT active FROM rooms WHERE name = $room'), [{ active: true }])
    const metrics = await (await fetch(`${t.httpUrl}/metrics`)).text()
    assert.match(metrics, /^symphony_metadata_queue_length \d+$/m)
    assert.match(metrics, /^symphony_metadata_events_dropped_total 0$/m)
    a.destroy()
    b.destroy()
    await eventually(async () => (await openSessions()) === 0, 'both sessions closed')
    await eventually(
      async () => (await query('SELECT active FROM rooms WHERE name = $room'))[0]?.active === false,
      'the room inactive after the grace period',
    )
  })
})
