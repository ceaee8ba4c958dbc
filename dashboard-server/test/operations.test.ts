import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { after, before, describe, it } from 'node:test'
import { connectSynced, destroyClients, uniqueRoom } from '@symphony/test-helpers/clients'
import { MemorySnapshotStore } from '../../server/src/adapters/memory-snapshot-store.js'
import { createDashboardApp } from '../src/app.js'
import { LiveEvents } from '../src/live-events.js'
import { MetadataQueries, type ServerSamplePoint } from '../src/queries.js'
import { DASHBOARD_TOKEN, type DashboardStack, startDashboardStack } from './helpers/dashboard-stack.js'

interface SamplesBody {
  since: string
  until: string
  stepSeconds: number
  servers: {
    id: string
    samples: ServerSamplePoint[]
  }[]
  error: { code: string; message: string }
  rooms: { name: string }[]
}

/** The dashboard as an operations view: server samples, room order, its own /metrics. */
describe('dashboard operations API', () => {
  let stack: DashboardStack
  const prefix = uniqueRoom('ops')
  const rooms = ['b', 'a', 'c'].map((letter) => `${prefix}-${letter}`)
  let typist: Awaited<ReturnType<typeof connectSynced>>

  before(async () => {
    stack = await startDashboardStack()
    for (const room of rooms) {
      typist = await connectSynced(stack.sync.wsUrl, room)
      typist.doc.getText('t').insert(0, `hello ${room}`)
    }
    await connectSynced(stack.sync.wsUrl, rooms[2] as string) // receives what the typist sends
  })
  after(async () => {
    destroyClients()
    await stack.stop()
  })

  async function get(path: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${stack.base}${path}`, {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}`, ...headers },
    })
    return { status: response.status, body: (await response.json()) as SamplesBody }
  }

  it('serves each server’s samples: load, rates of messages and bytes, CPU and memory', async () => {
    const deadline = Date.now() + 10_000
    let body: SamplesBody
    for (;;) {
      body = (await get('/api/servers/samples')).body
      const points = body.servers.find((s) => s.id === stack.serverId)?.samples ?? []
      if (points.some((p) => p.connections === 4 && p.messagesOutPerSecond > 0)) break
      if (Date.now() > deadline) throw new Error(`no sample with the traffic: ${JSON.stringify(body)}`)
      typist.doc.getText('t').insert(0, 'more ') // traffic after the first (baseline) reading
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(body.stepSeconds, 10, 'an hour in steps of 10 s')
    const point = body.servers[0]?.samples.find((p) => p.messagesInPerSecond > 0)
    assert.ok(point)
    assert.equal(point.rooms, 3)
    assert.ok(point.bytesInPerSecond > 0 && point.messagesOutPerSecond > 0 && point.bytesOutPerSecond > 0)
    assert.ok(point.rssBytes > 10 * 1024 * 1024 && point.heapBytes > 0)
    assert.ok(point.cpu >= 0 && point.cpu < 64)
    assert.equal(point.errors, 0)
    // A week is drawn in wider steps: never more than 600 points per server.
    const week = await get(`/api/servers/samples?since=${Date.now() - 7 * 86_400_000}`)
    assert.equal(week.status, 200)
    assert.equal(week.body.stepSeconds, 1010)
  })

  it('refuses sample queries it cannot answer in bounded size', async () => {
    const bad = await get('/api/servers/samples?since=yesterday')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.code, 'BAD_QUERY')
    const long = await get(`/api/servers/samples?since=${Date.now() - 40 * 86_400_000}`)
    assert.equal(long.status, 400)
    assert.match(long.body.error.message, /31 days/)
    const backwards = await get(`/api/servers/samples?since=${Date.now()}&until=${Date.now() - 1000}`)
    assert.equal(backwards.status, 400)
  })

  it('sorts rooms by any column, either way', async () => {
    const names = async (query: string) =>
      (await get(`/api/rooms?q=${encodeURIComponent(prefix)}&${query}`)).body.rooms.map((r) => r.name)
    const sorted = [...rooms].sort()
    assert.deepEqual(await names('sort=name'), sorted)
    assert.deepEqual(await names('sort=name&order=desc'), [...sorted].reverse())
    assert.equal((await get('/api/rooms?order=sideways')).status, 400)
  })

  it('answers /metrics in Prometheus text to loopback callers', async () => {
    const response = await fetch(`${stack.base}/metrics`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/)
    const text = await response.text()
    for (const name of [
      'symphony_dashboard_http_requests_total',
      'symphony_dashboard_http_request_duration_seconds_bucket',
      'symphony_dashboard_sse_clients',
      'symphony_dashboard_db_query_errors_total',
      'symphony_dashboard_db_query_duration_seconds_count',
      'symphony_dashboard_build_info',
      'symphony_dashboard_process_cpu_seconds_total',
    ]) {
      assert.match(text, new RegExp(`^${name}`, 'm'), name)
    }
    assert.match(
      text,
      /symphony_dashboard_http_requests_total\{route="\/api\/servers\/samples",method="GET",status="200"\} \d+/,
    )
    assert.match(text, /symphony_dashboard_build_info\{version="test",node="v[\d.]+"\} 1/)
  })
})

describe('dashboard /metrics from another address', () => {
  const external =
    Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address ?? ''

  it('is hidden (404) unless the caller sends the dashboard token', {
    skip: !external && 'no non-loopback address',
  }, async () => {
    const queries = new MetadataQueries({} as never)
    const app = createDashboardApp({
      queries,
      events: new LiveEvents('postgres://unused', queries),
      token: DASHBOARD_TOKEN,
      sessionTtlMs: 60_000,
      internalToken: null,
      snapshots: new MemorySnapshotStore(),
    })
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, external, () => resolve(listening))
    })
    const url = `http://${external}:${(server.address() as AddressInfo).port}/metrics`
    const hidden = await fetch(url)
    assert.equal(hidden.status, 404)
    const withToken = await fetch(url, { headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` } })
    assert.equal(withToken.status, 200)
    assert.match(await withToken.text(), /symphony_dashboard_build_info/)
    server.closeAllConnections()
    server.close()
  })
})
