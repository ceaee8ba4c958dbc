import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import type { DatabaseConnection } from '../src/adapters/postgres/connect.js'
import { migrate } from '../src/adapters/postgres/migrations.js'
import { PgMetadataSink } from '../src/adapters/postgres/pg-metadata-sink.js'
import { pruneMetadata } from '../src/adapters/postgres/retention.js'
import { parseConfig } from '../src/config.js'
import { createSyncServer } from '../src/create-sync-server.js'
import { silentLogger } from '../src/logger.js'
import type { ServerSample } from '../src/ports/metadata-sink.js'
import { connectSynced, destroyClients, uniqueRoom } from './helpers/clients.js'
import { uniqueName } from './helpers/services.js'
import { connectIsolatedDatabase, METADATA_BACKENDS } from './helpers/test-database.js'

const DAY = 86_400_000

const backends = METADATA_BACKENDS

/** Running totals that grow as a test says. */
function fakeSample(overrides: Partial<ServerSample> = {}): ServerSample {
  return {
    cpuMicros: 0,
    rssBytes: 100 * 1024 * 1024,
    heapBytes: 40 * 1024 * 1024,
    connections: 3,
    rooms: 2,
    messagesIn: 0,
    messagesOut: 0,
    bytesIn: 0,
    bytesOut: 0,
    errors: 0,
    ...overrides,
  }
}

for (const backend of backends) {
  describe(`server samples and retention on ${backend.name}`, () => {
    let db: DatabaseConnection & { cleanup(): void }
    before(async () => {
      db = await backend.open()
      await migrate(db.pool)
    })
    after(async () => {
      await db.close()
      db.cleanup()
    })

    const count = async (sql: string, params: unknown[] = []) =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]?.n

    it('has the index on connection_sessions(server_id) and the server_samples table', async () => {
      const { rows } = await db.pool.query<{ indexname: string; indexdef: string }>(
        `SELECT indexname, indexdef FROM pg_indexes
         WHERE schemaname = current_schema() AND tablename IN ('connection_sessions', 'server_samples')`,
      )
      const byName = new Map(rows.map((row) => [row.indexname, row.indexdef]))
      assert.match(byName.get('connection_sessions_server_id') ?? '', /\(server_id\)/)
      assert.match(byName.get('server_samples_at') ?? '', /\(at\)/)
    })

    it('writes one row per sample interval: load now, and deltas of the totals since the last', async () => {
      const serverId = uniqueName('server')
      let clock = Date.parse('2026-01-01T00:00:00Z')
      let totals = fakeSample()
      const sink = new PgMetadataSink({
        serverId,
        address: 'a',
        connect: async () => ({ pool: db.pool, close: async () => {} }),
        logger: silentLogger,
        flushIntervalMs: 60_000,
        sample: async () => totals,
        metadataSampleIntervalMs: 10_000,
        now: () => clock,
      })
      await sink.flush() // the baseline: no row
      assert.equal(await count('server_samples WHERE server_id = $1', [serverId]), 0)
      clock += 10_000
      totals = fakeSample({
        cpuMicros: 5_000_000,
        messagesIn: 500,
        messagesOut: 1_500,
        bytesIn: 10_000,
        errors: 2,
      })
      await sink.flush()
      clock += 5_000 // not due yet
      await sink.flush()
      clock += 5_000
      totals = fakeSample({
        cpuMicros: 6_000_000,
        messagesIn: 600,
        messagesOut: 1_500,
        bytesIn: 12_000,
        errors: 2,
      })
      await sink.flush()
      const { rows } = await db.pool.query(
        `SELECT extract(epoch FROM at)::float8 * 1000 AS at, seconds, cpu, rss_bytes::float8 AS rss, connections,
           rooms, messages_in::int AS "in", messages_out::int AS out, bytes_in::int AS bytes, errors
         FROM server_samples WHERE server_id = $1 ORDER BY at`,
        [serverId],
      )
      assert.deepEqual(rows, [
        {
          at: Date.parse('2026-01-01T00:00:10Z'),
          seconds: 10,
          cpu: 0.5,
          rss: 100 * 1024 * 1024,
          connections: 3,
          rooms: 2,
          in: 500,
          out: 1_500,
          bytes: 10_000,
          errors: 2,
        },
        {
          at: Date.parse('2026-01-01T00:00:20Z'),
          seconds: 10,
          cpu: 0.1,
          rss: 100 * 1024 * 1024,
          connections: 3,
          rooms: 2,
          in: 100,
          out: 0,
          bytes: 2_000,
          errors: 0,
        },
      ])
      await sink.close()
    })

    it('prunes samples, closed sessions and long-gone servers older than the period; keeps the rest', async () => {
      const now = new Date('2026-01-15T00:00:00Z') // the samples above (January 1st) are newer than its cutoff
      const old = new Date(now.getTime() - 31 * DAY)
      const recent = new Date(now.getTime() - 29 * DAY)
      const live = uniqueName('live')
      const gone = uniqueName('gone')
      const room = uniqueName('room')
      await db.pool.query(
        `INSERT INTO servers (id, address, started_at, last_heartbeat_at) VALUES ($1, 'a', $3, $4), ($2, 'b', $3, $3)`,
        [live, gone, old, now],
      )
      const sample = `INSERT INTO server_samples (server_id, at, seconds, cpu, rss_bytes, heap_bytes, connections, rooms,
        messages_in, messages_out, bytes_in, bytes_out, errors) VALUES ($1, $2, 10, 0.1, 1, 1, 1, 1, 1, 1, 1, 1, 0)`
      await db.pool.query(sample, [live, old])
      await db.pool.query(sample, [live, recent])
      await db.pool.query(sample, [gone, old])
      const roomSample = `INSERT INTO room_samples (room, server_id, at, connections, bytes) VALUES ($1, $2, $3, 1, 1)`
      await db.pool.query(roomSample, [room, live, old])
      await db.pool.query(roomSample, [room, live, recent])
      const session = `INSERT INTO connection_sessions (id, room, server_id, user_id, opened_at, closed_at)
        VALUES ($1, $2, $3, 'u', $4, $5)`
      await db.pool.query(session, [`${live}:closed-old`, room, live, old, old])
      await db.pool.query(session, [`${live}:closed-recent`, room, live, old, recent])
      await db.pool.query(session, [`${live}:open-long`, room, live, old, null])
      await db.pool.query(session, [`${gone}:left-open`, room, gone, old, null])
      await db.pool.query(
        `INSERT INTO room_holders (room, server_id, since) VALUES ($1, $2, $3), ($1, $4, $3)`,
        [room, gone, old, live],
      )

      const sink = new PgMetadataSink({
        serverId: uniqueName('pruner'), // registering closes what its own id left open
        address: 'c',
        connect: async () => ({ pool: db.pool, close: async () => {} }),
        logger: silentLogger,
        flushIntervalMs: 60_000,
        retentionMs: 30 * DAY,
      })
      const result = await sink.prune(now)
      assert.deepEqual(result, {
        server_samples: 2,
        room_samples: 1,
        closed_sessions: 1,
        sessions_of_gone_servers: 1,
        holders_of_gone_servers: 1,
        gone_servers: 1,
      })
      const ids = async (sql: string, params: unknown[]) =>
        (await db.pool.query<{ id: string }>(sql, params)).rows.map((r) => r.id).sort()
      assert.deepEqual(await ids('SELECT id FROM servers WHERE id = ANY($1)', [[live, gone]]), [live])
      assert.deepEqual(await ids('SELECT id FROM connection_sessions WHERE room = $1', [room]), [
        `${live}:closed-recent`,
        `${live}:open-long`,
      ])
      assert.equal(await count('server_samples WHERE server_id = ANY($1)', [[live, gone]]), 1)
      assert.equal(await count('room_samples WHERE room = $1', [room]), 1)
      assert.equal(await count('room_holders WHERE room = $1', [room]), 1)
      assert.deepEqual(await sink.prune(now), {
        server_samples: 0,
        room_samples: 0,
        closed_sessions: 0,
        sessions_of_gone_servers: 0,
        holders_of_gone_servers: 0,
        gone_servers: 0,
      })
      await sink.close()
    })

    it('deletes in bounded batches: a run stops at its budget and the next goes on', async () => {
      const serverId = uniqueName('batched')
      const at = new Date('2025-01-01T00:00:00Z')
      await db.pool.query(
        `INSERT INTO room_samples (room, server_id, at, connections, bytes)
         SELECT 'r' || i, $1, $2, 1, 1 FROM generate_series(1, 7) AS i`,
        [serverId, at],
      )
      const before = new Date(at.getTime() + 1)
      const first = await pruneMetadata(db.pool, { before, batchSize: 3, maxBatches: 3 })
      // server_samples takes one batch (nothing to delete), room_samples the other two.
      assert.equal(first?.room_samples, 6)
      assert.equal(await count('room_samples WHERE server_id = $1', [serverId]), 1)
      const second = await pruneMetadata(db.pool, { before, batchSize: 3 })
      assert.equal(second?.room_samples, 1)
      assert.equal(await count('room_samples WHERE server_id = $1', [serverId]), 0)
    })
  })
}

describe('retention with real PostgreSQL: one server prunes at a time', () => {
  it('skips a run while another server holds the prune lock', async () => {
    const db = await connectIsolatedDatabase()
    await migrate(db.pool)
    const other = new pg.Client(db.url)
    await other.connect()
    await other.query('SELECT pg_advisory_lock(7230412)')
    assert.equal(await pruneMetadata(db.pool, { before: new Date() }), null)
    await other.query('SELECT pg_advisory_unlock(7230412)')
    assert.ok(await pruneMetadata(db.pool, { before: new Date() }))
    await other.end()
    await db.close()
  })
})

describe('a sync server built from its configuration', () => {
  after(() => destroyClients())

  it('writes server samples of its real traffic, with METADATA_RETENTION_DAYS checked', async () => {
    assert.throws(
      () => parseConfig({ AUTH: 'none', METADATA_RETENTION_DAYS: '0' }),
      /METADATA_RETENTION_DAYS/,
    )
    const { metadata } = parseConfig({ AUTH: 'none' }).backends
    assert.equal(metadata.kind !== 'none' && metadata.retentionDays, 30)
    const db = await connectIsolatedDatabase()
    await migrate(db.pool) // the server migrates too, at its first flush; this test may ask before
    const folder = mkdtempSync(join(tmpdir(), 'symphony-samples-'))
    const config = parseConfig({
      AUTH: 'none',
      PORT: '0',
      DATABASE_URL: db.url,
      SNAPSHOTS: `file://${folder}/snapshots`,
      JOURNAL: `file://${folder}/journal`,
      METADATA_SAMPLE_INTERVAL_MS: '100',
      METADATA_RETENTION_DAYS: '7',
    })
    // As main.ts starts it: the configuration as it is, the adapters it names.
    const server = await createSyncServer({ ...config, host: '127.0.0.1' })
    const client = await connectSynced(`ws://127.0.0.1:${server.port}`, uniqueRoom('sampled'))
    client.doc.getText('t').insert(0, 'hello')
    const deadline = Date.now() + 10_000
    let row: { rooms: number; bytes: number; out: number; rss: number; cpu: number } | undefined
    while (!row && Date.now() < deadline) {
      const { rows } = await db.pool.query(
        `SELECT connections, rooms, messages_in::int AS "in", messages_out::int AS out, bytes_in::int AS bytes,
           rss_bytes::float8 AS rss, cpu FROM server_samples
         WHERE server_id = $1 AND connections = 1 AND messages_in > 0`,
        [config.serverId],
      )
      row = rows[0]
      if (!row) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.ok(row, 'a sample with the connection and its messages')
    assert.equal(row.rooms, 1)
    assert.ok(row.bytes > 0 && row.out > 0 && row.rss > 0 && row.cpu >= 0)
    client.destroy()
    await server.shutdown()
    await db.close()
    rmSync(folder, { recursive: true, force: true })
  })
})
