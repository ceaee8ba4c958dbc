import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { createInterface } from 'node:readline'
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

describe('embedded Postgres in its own process', () => {
  it('runs outside the process that started it, so its queries never stall that event loop', async () => {
    const db = await startEmbeddedPostgres('memory://', 0)
    try {
      assert.notEqual(db.pid, process.pid)
      assert.ok(isAlive(db.pid))
      const client = new pg.Client(db.url)
      await client.connect()
      // A long query over there; a timer here still fires on time meanwhile.
      const query = client.query('SELECT count(*)::int AS n FROM generate_series(1, 3000000)')
      const lateness = await timerLateness(20)
      assert.deepEqual((await query).rows, [{ n: 3000000 }])
      assert.ok(lateness < 200, `a 20 ms timer fired ${lateness} ms late during the query`)
      await client.end()
    } finally {
      await db.stop()
    }
    assert.equal(isAlive(db.pid), false)
  })

  it('fails to start, naming the reason, when its port is taken', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    try {
      await assert.rejects(startEmbeddedPostgres('memory://', port), /EADDRINUSE/)
    } finally {
      taken.close()
    }
  })

  it('ends when the process that started it dies without stopping it', async () => {
    const script = `
      import { startEmbeddedPostgres } from ${JSON.stringify(new URL('../src/adapters/postgres/embedded-postgres.ts', import.meta.url).href)}
      const db = await startEmbeddedPostgres('memory://', 0)
      console.log(JSON.stringify({ pid: db.pid }))
      setInterval(() => {}, 1000)
    `
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const [line] = (await once(createInterface({ input: parent.stdout }), 'line')) as [string]
    const { pid } = JSON.parse(line) as { pid: number }
    assert.ok(isAlive(pid))
    parent.kill('SIGKILL')
    await once(parent, 'exit')
    await until(() => !isAlive(pid), 15_000)
  })
})

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** How late a `ms` timer fires. */
async function timerLateness(ms: number): Promise<number> {
  const start = performance.now()
  await new Promise((resolve) => setTimeout(resolve, ms))
  return performance.now() - start - ms
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
