import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { METADATA_NOTIFY_CHANNEL } from '@symphony/client/wire'
import { startPostgres } from '@symphony/dev-scripts/services'
import pg from 'pg'
import { connectDatabase, type DatabaseConnection } from '../src/adapters/postgres/connect.js'
import { MIGRATIONS, migrate } from '../src/adapters/postgres/migrations.js'
import { PgMetadataSink } from '../src/adapters/postgres/pg-metadata-sink.js'
import type { Logger } from '../src/logger.js'
import { silentLogger } from '../src/logger.js'
import { uniqueName } from './helpers/services.js'
import { METADATA_BACKENDS } from './helpers/test-database.js'
import { TRICKY_ROOM_NAMES } from './helpers/tricky-room-names.js'

/** A logger that keeps warnings, to check what operators would read. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = []
  const warn = (fieldsOrMessage: object | string, message?: string) => {
    warnings.push(typeof fieldsOrMessage === 'string' ? fieldsOrMessage : (message ?? ''))
  }
  const logger: Logger & { warnings: string[] } = { ...silentLogger, warnings, warn, child: () => logger }
  return logger
}

const backends = METADATA_BACKENDS

for (const backend of backends) {
  describe(`PgMetadataSink and migrations on ${backend.name}`, () => {
    let db: DatabaseConnection & { cleanup(): void }
    before(async () => {
      db = await backend.open()
    })
    after(async () => {
      await db.close()
      db.cleanup()
    })

    const sinkFor = (serverId: string) =>
      new PgMetadataSink({
        serverId,
        address: '10.0.0.7:9234',
        connect: async () => ({ pool: db.pool, close: async () => {} }),
        logger: silentLogger,
        flushIntervalMs: 60_000, // the tests flush themselves
      })

    it('applies each migration once, even when servers start together', async () => {
      const applied = await Promise.all([migrate(db.pool), migrate(db.pool)])
      assert.deepEqual(applied.flat().sort(), MIGRATIONS.map((m) => m.version).sort())
      assert.deepEqual(await migrate(db.pool), [])
      const { rows } = await db.pool.query('SELECT version FROM schema_migrations ORDER BY version')
      assert.deepEqual(
        rows.map((r) => r.version),
        MIGRATIONS.map((m) => m.version),
      )
    })

    it('writes servers, rooms, holders, sessions and samples in batches', async () => {
      const serverId = uniqueName('server')
      const room = uniqueName('room')
      const sink = sinkFor(serverId)
      sink.record({ type: 'room-loaded', room, bytes: 120 })
      sink.record(opened(room, `${serverId}:1`, 'ada'))
      sink.record(opened(room, `${serverId}:2`, 'bob', { userName: 'Bob', userInfo: { team: 'blue' } }))
      sink.record({ type: 'room-sample', room, connections: 2, bytes: 300 })
      assert.deepEqual(sink.stats(), { queued: 4, dropped: 0 })
      await sink.flush()
      assert.deepEqual(sink.stats(), { queued: 0, dropped: 0 })

      const server = (
        await db.pool.query('SELECT address, last_heartbeat_at FROM servers WHERE id = $1', [serverId])
      ).rows[0]
      assert.equal(server?.address, '10.0.0.7:9234')
      const roomRow = async () =>
        (await db.pool.query('SELECT bytes, active FROM rooms WHERE name = $1', [room])).rows[0]
      assert.deepEqual(await roomRow(), { bytes: '300', active: true })
      const open = await db.pool.query(
        'SELECT user_id, user_name, user_info FROM connection_sessions WHERE room = $1 AND closed_at IS NULL ORDER BY user_id',
        [room],
      )
      assert.deepEqual(open.rows, [
        { user_id: 'ada', user_name: null, user_info: null },
        { user_id: 'bob', user_name: 'Bob', user_info: { team: 'blue' } },
      ])
      const samples = await db.pool.query('SELECT connections, bytes FROM room_samples WHERE room = $1', [
        room,
      ])
      assert.deepEqual(samples.rows, [{ connections: 2, bytes: '300' }])

      // A batch of joins and leaves alone says nothing about the size: it keeps the last one.
      sink.record(opened(room, `${serverId}:3`, 'cy'))
      sink.record({ type: 'connection-closed', room, connectionId: `${serverId}:3` })
      await sink.flush()
      assert.deepEqual(await roomRow(), { bytes: '300', active: true })

      sink.record({ type: 'connection-closed', room, connectionId: `${serverId}:1` })
      sink.record({ type: 'connection-closed', room, connectionId: `${serverId}:2` })
      sink.record({ type: 'room-unloaded', room, bytes: 280 })
      await sink.close()
      assert.deepEqual(await roomRow(), { bytes: '280', active: false })
      const closed = await db.pool.query(
        'SELECT count(*)::int AS n FROM connection_sessions WHERE room = $1 AND closed_at IS NOT NULL',
        [room],
      )
      assert.equal(closed.rows[0]?.n, 3)
    })

    it('keeps rooms of every tricky name apart, each under its exact name', async () => {
      const serverId = uniqueName('server')
      const sink = sinkFor(serverId)
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) {
        sink.record({ type: 'room-loaded', room, bytes: i })
        sink.record(opened(room, `${serverId}:${i}`, 'ada'))
      }
      await sink.flush()
      const held = await db.pool.query(
        'SELECT h.room, r.bytes FROM room_holders h JOIN rooms r ON r.name = h.room WHERE h.server_id = $1',
        [serverId],
      )
      assert.deepEqual(
        new Map(held.rows.map((row) => [row.room, Number(row.bytes)])),
        new Map(TRICKY_ROOM_NAMES.map((room, i) => [room, i])),
      )
      await sink.close()
    })

    it('forgets a deleted room entirely, and its last goodbyes do not write it back', async () => {
      const serverId = uniqueName('server')
      const room = uniqueName('room')
      const sink = sinkFor(serverId)
      sink.record({ type: 'room-loaded', room, bytes: 10 })
      sink.record(opened(room, `${serverId}:1`, 'ada'))
      sink.record({ type: 'room-sample', room, connections: 1, bytes: 10 })
      await sink.flush()
      const rowsOf = async () => {
        const counts = await Promise.all(
          [
            'rooms WHERE name',
            'room_holders WHERE room',
            'connection_sessions WHERE room',
            'room_samples WHERE room',
          ].map(
            async (from) =>
              (await db.pool.query(`SELECT count(*)::int AS n FROM ${from} = $1`, [room])).rows[0]?.n,
          ),
        )
        return counts
      }
      assert.deepEqual(await rowsOf(), [1, 1, 1, 1])
      sink.record({ type: 'room-deleted', room })
      // What the closing connections and the unload report after the deletion.
      sink.record({ type: 'connection-closed', room, connectionId: `${serverId}:1` })
      sink.record({ type: 'room-unloaded', room, bytes: 10 })
      await sink.flush()
      assert.deepEqual(await rowsOf(), [0, 0, 0, 0])
      sink.record(opened(room, `${serverId}:2`, 'bob')) // the room begins again
      await sink.close()
      assert.deepEqual(await rowsOf(), [1, 0, 1, 0])
    })

    it('NOTIFYs the rooms each batch touched to other connections', async () => {
      const listener = new pg.Client(db.url) // another connection, as the dashboard's
      await listener.connect()
      const room = uniqueName('room')
      // Channels are database-wide: other test files' batches arrive too.
      const ours = new Promise<string>((resolve) =>
        listener.on('notification', (n) => {
          if (n.payload?.includes(room)) resolve(n.payload)
        }),
      )
      await listener.query(`LISTEN ${METADATA_NOTIFY_CHANNEL}`)
      const serverId = uniqueName('server')
      const sink = new PgMetadataSink({
        serverId,
        address: 'a',
        connect: async () => ({ pool: db.pool, close: async () => {} }),
        logger: silentLogger,
      })
      sink.record(opened(room, `${serverId}:1`, 'ada'))
      await sink.flush()
      assert.deepEqual(JSON.parse(await ours), { server: serverId, rooms: [room] })
      await sink.close()
      await listener.end()
    })

    it('writes a batch touching more rooms than a NOTIFY can name, and says "many"', async () => {
      const serverId = uniqueName('server')
      const sink = sinkFor(serverId)
      const rooms = Array.from({ length: 100 }, (_, i) => `${'r'.repeat(120)}-${i}`)
      for (const room of rooms) sink.record({ type: 'room-sample', room, connections: 1, bytes: 10 })
      await sink.flush()
      assert.deepEqual(
        sink.stats(),
        { queued: 0, dropped: 0 },
        'written, not rolled back by an oversized NOTIFY',
      )
      const written = await db.pool.query(
        'SELECT count(*)::int AS n FROM room_samples WHERE server_id = $1',
        [serverId],
      )
      assert.equal(written.rows[0]?.n, 100)
      await sink.close()
    })

    it('closes what a previous run of the same server left open', async () => {
      const serverId = uniqueName('server')
      const room = uniqueName('room')
      const crashed = sinkFor(serverId)
      crashed.record({ type: 'room-loaded', room, bytes: 1 })
      crashed.record(opened(room, `${serverId}:1`, 'ada'))
      await crashed.flush() // and then the process dies without closing anything
      const restarted = sinkFor(serverId)
      await restarted.flush()
      const open = await db.pool.query(
        'SELECT count(*)::int AS n FROM connection_sessions WHERE room = $1 AND closed_at IS NULL',
        [room],
      )
      assert.equal(open.rows[0]?.n, 0)
      const holders = await db.pool.query(
        'SELECT count(*)::int AS n FROM room_holders WHERE server_id = $1',
        [serverId],
      )
      assert.equal(holders.rows[0]?.n, 0)
      await Promise.all([crashed.close(), restarted.close()])
    })
  })
}

/** A connection-opened event; the user is anonymous unless `who` names them. */
function opened(
  room: string,
  connectionId: string,
  userId: string,
  who: { userName: string | null; userInfo: Record<string, unknown> | null } = {
    userName: null,
    userInfo: null,
  },
) {
  return { type: 'connection-opened' as const, room, connectionId, userId, ...who }
}

describe('PgMetadataSink with real PostgreSQL: outages', () => {
  it('holds at most maxQueued events once its database stops, counting and logging the rest', async () => {
    // A Postgres of this test's own, so stopping it disturbs no one else.
    const postgres = await startPostgres()
    const logger = recordingLogger()
    const sink = new PgMetadataSink({
      serverId: uniqueName('server'),
      address: 'a',
      connect: () => connectDatabase({ kind: 'postgres', url: postgres.url }, logger),
      logger,
      maxQueued: 20,
      flushIntervalMs: 60_000,
    })
    const open = (i: number) => opened('r', `c${i}`, 'u')
    sink.record(open(0))
    await sink.flush()
    assert.deepEqual(sink.stats(), { queued: 0, dropped: 0 }, 'written while the database runs')

    await postgres.stop()
    // record() is synchronous: all 50 calls return before any database work could happen.
    for (let i = 1; i <= 50; i++) sink.record(open(i))
    assert.deepEqual(sink.stats(), { queued: 20, dropped: 30 })
    await sink.flush() // fails: the batch goes back, still within the bound
    assert.deepEqual(sink.stats(), { queued: 20, dropped: 30 })
    assert.ok(logger.warnings.includes('metadata queue full: events dropped'))
    assert.ok(logger.warnings.includes('metadata write failed; will retry'))
    await sink.close()
  })
})
