import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

describe('operations endpoints', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(() => t.stop())
  afterEach(destroyClients)

  it('GET /healthz reports readiness, rooms and connections', async () => {
    const client = await connectSynced(t.wsUrl, uniqueRoom())
    const response = await fetch(`${t.httpUrl}/healthz`)
    assert.equal(response.status, 200)
    const health = (await response.json()) as Record<string, unknown>
    assert.equal(health.status, 'ok')
    assert.equal(health.ready, true)
    assert.equal(health.rooms, 1)
    assert.equal(health.connections, 1)
    const ok = { ok: true }
    const embedded = { registry: ok, snapshots: ok, journal: ok, metadata: ok }
    assert.deepEqual(health.dependencies, embedded, 'embedded dependencies are simply ok')
    client.destroy()
  })

  it('GET /metrics exports Prometheus text that follows the traffic', async () => {
    const scrape = async () => (await fetch(`${t.httpUrl}/metrics`)).text()
    const count = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1])
    const before = await scrape()
    const a = await connectSynced(t.wsUrl, uniqueRoom())
    a.doc.getText('t').insert(0, 'x')
    const b = await connectSynced(t.wsUrl, uniqueRoom())
    await eventually(() => t.server.manager.roomCount === 2, 'the earlier test’s room has unloaded')
    const after = await scrape()
    assert.ok(
      count(after, 'symphony_messages_received_total') > count(before, 'symphony_messages_received_total'),
    )
    assert.ok(count(after, 'symphony_bytes_sent_total') > count(before, 'symphony_bytes_sent_total'))
    assert.equal(count(after, 'symphony_connections'), 2)
    assert.equal(count(after, 'symphony_rooms'), 2)
    for (const name of [
      'symphony_snapshots_total',
      'symphony_snapshot_failures_total',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      assert.match(after, new RegExp(`^${name} `, 'm'), name)
    }
    assert.match(after, /^symphony_snapshot_duration_seconds_count /m)
    a.destroy()
    b.destroy()
  })

  it('answers unknown paths with a JSON 404', async () => {
    const response = await fetch(`${t.httpUrl}/nope`)
    assert.equal(response.status, 404)
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'NOT_FOUND')
  })

  it('serves the React example at GET /react, while a WebSocket to /react is the room "react"', async () => {
    const demo = await startTestServer({
      demoFolder: fileURLToPath(new URL('../dist/demo', import.meta.url)),
    })
    try {
      const page = await fetch(`${demo.httpUrl}/react`)
      assert.equal(page.status, 200)
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
      assert.match(await page.text(), /src="\.\/react\.js"/)
      const script = await fetch(`${demo.httpUrl}/react.js`)
      assert.equal(script.status, 200)
      assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/)
      const client = await connectSynced(demo.wsUrl, 'react')
      client.doc.getText('t').insert(0, 'x')
      await eventually(
        () => demo.server.manager.loadedRoom('react')?.doc.getText('t').toString() === 'x',
        'the room react has the edit',
      )
    } finally {
      await demo.stop()
    }
  })
})
