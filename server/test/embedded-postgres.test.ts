import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/adapters/postgres/embedded-postgres.js'

describe('embedded Postgres (PGlite behind the notify relay)', () => {
  let db: EmbeddedPostgres
  before(async () => {
    db = await startEmbeddedPostgres('memory://', 0)
  })
  after(() => db.stop())

  it('answers a client that asks for TLS with a clear refusal instead of hanging', async () => {
    const url = db.url.replace('?sslmode=disable', '')
    const tls = new pg.Client({ connectionString: url, ssl: { rejectUnauthorized: false } })
    await assert.rejects(tls.connect(), /does not support SSL/)
    const plain = new pg.Client(url)
    await plain.connect()
    assert.deepEqual((await plain.query('SELECT 1 AS one')).rows, [{ one: 1 }])
    await plain.end()
  })

  it('delivers a NOTIFY to every listening connection, not only the sender', async () => {
    const [listener, other, sender] = [new pg.Client(db.url), new pg.Client(db.url), new pg.Client(db.url)]
    await Promise.all([listener, other, sender].map((c) => c.connect()))
    const heard = new Promise<string | undefined>((resolve) =>
      listener.on('notification', (n) => resolve(n.payload)),
    )
    await listener.query('LISTEN board')
    // Another connection mid-query must still get whole protocol messages.
    const busy = other.query('SELECT count(*)::int AS n FROM generate_series(1, 20000)')
    await sender.query("NOTIFY board, 'hello'")
    assert.equal(await heard, 'hello')
    assert.deepEqual((await busy).rows, [{ n: 20000 }])
    await Promise.all([listener, other, sender].map((c) => c.end()))
  })
})
