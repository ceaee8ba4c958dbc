import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { connectSynced, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { connectIsolatedDatabase } from '@symphony/test-helpers/test-database'
import * as Y from 'yjs'
import { MemorySnapshotStore } from '../../server/src/adapters/memory-snapshot-store.js'
import { createDashboardApp } from '../src/app.js'
import { parseDashboardConfig } from '../src/config.js'
import { LiveEvents } from '../src/live-events.js'
import { MetadataQueries } from '../src/queries.js'
import { DASHBOARD_TOKEN, type DashboardStack, startDashboardStack } from './helpers/dashboard-stack.js'

/** Every field the tests read from the API's JSON (each route fills its own). */
interface ApiBody {
  error: { code: string; message: string }
  total: number
  rooms: { name: string; connections: number; active: boolean }[]
  connections: { serverId: string; userId: string }[]
  servers: {
    id: string
    serverId: string
    address: string
    live: boolean
    rooms: number
    connections: number
  }[]
  history: { connections: number; bytes: number }[]
  totals: { servers: number; rooms: number; activeRooms: number; connections: number }
  series: unknown[]
  versions: Version[]
  nextCursor: string | null
}

interface Version {
  id: string
  savedAt: string
  bytes: number
}

/** The dashboard API over real Postgres, fed by a real sync server and real y-websocket clients. */
describe('dashboard API', () => {
  let stack: DashboardStack
  const busy = uniqueRoom('busy')
  const quiet = uniqueRoom('quiet')

  before(async () => {
    stack = await startDashboardStack()
    const a = await connectSynced(stack.sync.wsUrl, busy)
    await connectSynced(stack.sync.wsUrl, busy)
    await connectSynced(stack.sync.wsUrl, quiet)
    a.doc.getText('t').insert(0, 'x'.repeat(2_000))
  })
  after(async () => {
    destroyClients()
    await stack.stop()
  })

  async function get(path: string, token: string | null = DASHBOARD_TOKEN) {
    const response = await fetch(`${stack.base}${path}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    })
    return { status: response.status, headers: response.headers, body: (await response.json()) as ApiBody }
  }

  async function post(path: string) {
    const response = await fetch(`${stack.base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    })
    return { status: response.status, body: (await response.json()) as ApiBody }
  }

  /** Re-reads `path` until `check` holds: metadata lands within a flush or two. */
  async function until(path: string, check: (body: ApiBody) => boolean): Promise<ApiBody> {
    const deadline = Date.now() + 5_000
    for (;;) {
      const { body } = await get(path)
      if (check(body)) return body
      if (Date.now() > deadline) throw new Error(`${path} never matched; last: ${JSON.stringify(body)}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  it('refuses requests without the token, with a JSON error and security headers', async () => {
    const refused = await get('/api/rooms', null)
    assert.equal(refused.status, 401)
    assert.equal(refused.body.error.code, 'UNAUTHORIZED')
    assert.equal((await get('/api/rooms', 'wrong-token-of-another-length')).status, 401)
    assert.equal(refused.headers.get('x-content-type-options'), 'nosniff')
    assert.ok(refused.headers.get('content-security-policy'))
  })

  it('signs the page in with an opaque, expiring session cookie, never the token itself', async () => {
    const signIn = (token: string, headers: Record<string, string> = {}) =>
      fetch(`${stack.base}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ token }),
        redirect: 'manual',
      })
    const failed = await signIn('not-the-dashboard-token')
    assert.equal(failed.headers.get('location'), './?login=failed')
    assert.equal(failed.headers.get('set-cookie'), null)
    const plain = await signIn(DASHBOARD_TOKEN)
    const cookie = plain.headers.get('set-cookie') ?? ''
    assert.match(cookie, /HttpOnly/i)
    assert.match(cookie, /SameSite=Strict/i)
    assert.match(cookie, /Max-Age=43200/, 'expires (12 h by default)')
    assert.doesNotMatch(cookie, /Secure/i, 'plain HTTP (local development): not Secure')
    assert.equal(cookie.includes(DASHBOARD_TOKEN), false, 'the token never leaves the form post')
    assert.equal(cookie.includes(encodeURIComponent(DASHBOARD_TOKEN)), false)
    const behindHttps = await signIn(DASHBOARD_TOKEN, { 'x-forwarded-proto': 'https' })
    assert.match(
      behindHttps.headers.get('set-cookie') ?? '',
      /;\s*Secure/i,
      'Secure behind the HTTPS load balancer',
    )
    const session = cookie.split(';')[0] as string
    const withCookie = (value: string) => fetch(`${stack.base}/api/stats`, { headers: { cookie: value } })
    assert.equal((await withCookie(session)).status, 200, 'the session opens the API')
    // A different second-to-last character (the last one of a base64url MAC carries padding bits).
    const tampered = `${session.slice(0, -2)}${session.at(-2) === 'A' ? 'B' : 'A'}${session.slice(-1)}`
    assert.equal((await withCookie(tampered)).status, 401, 'a forged session')
    assert.equal(
      (await withCookie(`symphony_dashboard=${DASHBOARD_TOKEN}`)).status,
      401,
      'the token is no session',
    )
    const out = await fetch(`${stack.base}/logout`, { method: 'POST', redirect: 'manual' })
    assert.match(out.headers.get('set-cookie') ?? '', /symphony_dashboard=;/)
  })

  it('answers the load balancer’s health check without the token', async () => {
    const health = await get('/healthz', null)
    assert.equal(health.status, 200)
    assert.deepEqual(health.body, { status: 'ok' })
  })

  it('lists rooms with live connections and sizes; searches, sorts and pages', async () => {
    const body = await until(`/api/rooms?q=${busy}`, (b) => b.rooms[0]?.connections === 2)
    assert.equal(body.total, 1)
    assert.equal(body.rooms[0]?.name, busy)
    assert.equal(body.rooms[0]?.active, true)
    const all = await until('/api/rooms?sort=connections', (b) => b.rooms.some((r) => r.name === quiet))
    const names = all.rooms.map((r) => r.name)
    assert.ok(names.indexOf(busy) < names.indexOf(quiet), 'busiest first')
    const page = await get('/api/rooms?sort=name&limit=1&offset=1')
    assert.equal(page.body.rooms.length, 1)
    assert.equal(page.body.total, 2)
    const bad = await get('/api/rooms?limit=5000')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.code, 'BAD_QUERY')
  })

  it('shows one room: connections now, the server holding it, size and connection history', async () => {
    const room = await until(`/api/rooms/${busy}`, (b) => b.history?.some((h) => h.connections === 2))
    assert.equal(room.connections.length, 2)
    assert.deepEqual(
      room.connections.map((c) => c.serverId),
      [stack.serverId, stack.serverId],
    )
    assert.deepEqual(
      room.servers.map((s) => [s.serverId, s.address]),
      [[stack.serverId, stack.internalAddress]],
    )
    await until(`/api/rooms/${busy}`, (b) => b.history.some((h) => h.bytes >= 2_000))
    assert.equal((await get('/api/rooms/bad%0Aname')).status, 400)
    assert.equal((await get('/api/rooms/%ED%A0%80')).status, 400, 'escapes that are not UTF-8')
    const missing = await get(`/api/rooms/${uniqueRoom('never')}`)
    assert.equal(missing.status, 404)
    assert.equal(missing.body.error.code, 'ROOM_NOT_FOUND')
  })

  it('lists servers and totals', async () => {
    const { servers } = await until('/api/servers', (b) => b.servers.some((s) => s.connections === 3))
    const server = servers.find((s) => s.id === stack.serverId)
    assert.equal(server?.live, true)
    assert.equal(server?.rooms, 2)
    const stats = await until('/api/stats', (b) => b.totals.connections === 3)
    assert.deepEqual(
      { servers: stats.totals.servers, rooms: stats.totals.rooms, activeRooms: stats.totals.activeRooms },
      { servers: 1, rooms: 2, activeRooms: 2 },
    )
    assert.ok(stats.series.length > 0)
    assert.equal((await get('/api/nothing')).status, 404)
  })

  it('lists a room’s saved versions, shows one, and restores it through a sync server: its clients see it', async () => {
    const room = uniqueRoom('versions')
    const [a, b] = [await connectSynced(stack.sync.wsUrl, room), await connectSynced(stack.sync.wsUrl, room)]
    const saveHolding = async (text: string) => {
      await eventually(
        () => stack.sync.server.manager.loadedRoom(room)?.doc.getText('t').toString() === text,
        text,
      )
      await stack.sync.server.manager.save(room)
    }
    a.doc.getText('t').insert(0, 'first draft')
    await saveHolding('first draft')
    a.doc.getText('t').delete(0, 5)
    a.doc.getText('t').insert(0, 'second')
    await saveHolding('second draft')
    const listed = await get(`/api/rooms/${room}/versions`)
    assert.equal(listed.status, 200)
    const versions = listed.body.versions
    assert.equal(versions.length, 2, 'one version per save, newest first')
    const [newest, first] = versions as [Version, Version]
    assert.ok(newest.savedAt >= first.savedAt && first.bytes > 0)
    const paged = await get(`/api/rooms/${room}/versions?limit=1`)
    assert.deepEqual(paged.body.versions, [newest])
    const rest = await get(`/api/rooms/${room}/versions?limit=1&cursor=${paged.body.nextCursor}`)
    assert.deepEqual(rest.body.versions, [first])
    assert.deepEqual((await get(`/api/rooms/${room}/versions/${first.id}`)).body, { t: 'first draft' })
    // Through a live sync server: both clients see the version's text, and the restore is a version.
    await until(`/api/servers`, (body) => body.servers.some((server) => server.live))
    const restored = await post(`/api/rooms/${room}/versions/${first.id}/restore`)
    assert.equal(restored.status, 200, JSON.stringify(restored.body))
    await eventually(
      () => [a, b].every((client) => client.doc.getText('t').toString() === 'first draft'),
      'both clients hold the restored text',
    )
    assert.equal((await get(`/api/rooms/${room}/versions`)).body.versions.length, 3)
    // Refused: an id no store gives, an unknown one (read here, and restored by the server).
    assert.equal((await get(`/api/rooms/${room}/versions/a%20b`)).body.error.code, 'VERSION_ID_INVALID')
    assert.equal((await get(`/api/rooms/${room}/versions/nope`)).body.error.code, 'VERSION_NOT_FOUND')
    const unknown = await post(`/api/rooms/${room}/versions/nope/restore`)
    assert.deepEqual([unknown.status, unknown.body.error.code], [404, 'VERSION_NOT_FOUND'])
    assert.equal((await get(`/api/rooms/${room}/versions?limit=0`)).status, 400)
  })

  it('shows a room’s document as JSON: live from the server holding it, else from its snapshot', async () => {
    const room = uniqueRoom('shapes')
    const client = await connectSynced(stack.sync.wsUrl, room)
    client.doc.transact(() => {
      const shape = new Y.Map<string | number>()
      shape.set('kind', 'rect')
      shape.set('x', 10)
      client.doc.getMap('shapes').set('s1', shape)
      client.doc.getText('title').insert(0, 'Board')
      client.doc.getArray('log').push(['created'])
    })
    // Once the metadata says which server holds the room (the next flush), it is read from there.
    await until(`/api/rooms/${room}/state`, (b) => JSON.stringify(b).includes('Board'))
    const live = await get(`/api/rooms/${room}/state`)
    assert.equal(live.headers.get('symphony-source'), 'live')
    const expected = { shapes: { s1: { kind: 'rect', x: 10 } }, title: 'Board', log: ['created'] }
    assert.deepEqual(live.body, expected)
    // Everyone leaves: the server saves and unloads the room; the dashboard reads the snapshot.
    client.destroy()
    await until(`/api/rooms/${room}`, (b) => b.servers.length === 0)
    const saved = await get(`/api/rooms/${room}/state`)
    assert.equal(saved.headers.get('symphony-source'), 'snapshot')
    assert.deepEqual(saved.body, expected)
    const never = await get(`/api/rooms/${uniqueRoom('nowhere')}/state`)
    assert.equal(never.status, 404)
    assert.equal(never.body.error.code, 'ROOM_NOT_FOUND')
  })

  it('streams a room’s live connection count over SSE as a client joins', async () => {
    const response = await fetch(`${stack.base}/api/events`, {
      headers: { authorization: `Bearer ${DASHBOARD_TOKEN}` },
    })
    assert.equal(response.headers.get('content-type'), 'text/event-stream')
    const reader = response.body?.getReader()
    assert.ok(reader)
    const room = uniqueRoom('joining')
    const decoder = new TextDecoder()
    // The ": connected" comment: the stream is registered before the client joins.
    let text = decoder.decode((await reader.read()).value)
    const seen = (async () => {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`stream ended; got: ${text}`)
        text += decoder.decode(value, { stream: true })
        if (text.includes(`{"room":"${room}","connections":1}`)) return
      }
    })()
    await connectSynced(stack.sync.wsUrl, room)
    await seen
    assert.match(text, /^event: rooms$/m)
    await reader.cancel()
  })
})

describe('dashboard API before any sync server wrote metadata', () => {
  it('answers 503 NO_METADATA_YET instead of failing', async () => {
    const db = await connectIsolatedDatabase() // an empty schema: nothing migrated
    const queries = new MetadataQueries(db.pool)
    const app = createDashboardApp({
      queries,
      events: new LiveEvents(db.url, queries),
      token: null,
      sessionTtlMs: 60_000,
      internalToken: null,
      snapshots: new MemorySnapshotStore(),
    })
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
    })
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/rooms`)
    assert.equal(response.status, 503)
    assert.equal(((await response.json()) as ApiBody).error.code, 'NO_METADATA_YET')
    server.closeAllConnections()
    server.close()
    await db.close()
  })
})

describe('dashboard configuration', () => {
  it('refuses to run in production without DASHBOARD_TOKEN, and checks its values', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/postgres'
    assert.throws(
      () => parseDashboardConfig({ DATABASE_URL: url, NODE_ENV: 'production' }),
      /^Error: DASHBOARD_TOKEN: required in production/,
    )
    assert.equal(parseDashboardConfig({ DATABASE_URL: url }).token, null)
    assert.throws(() => parseDashboardConfig({ DATABASE_URL: url, DASHBOARD_TOKEN: 'short' }), /at least 16/)
    assert.throws(() => parseDashboardConfig({}), /DATABASE_URL/)
    assert.throws(() => parseDashboardConfig({ DATABASE_URL: 'pglite://./data/pg' }), /must be postgres/)
    assert.deepEqual(
      parseDashboardConfig({ DATABASE_URL: url, DASHBOARD_TOKEN: DASHBOARD_TOKEN, DASHBOARD_PORT: '3100' }),
      {
        port: 3100,
        host: '0.0.0.0',
        databaseUrl: url,
        token: DASHBOARD_TOKEN,
        allowedHosts: undefined,
        sessionTtlMs: 12 * 3_600_000,
        internalToken: null,
        snapshots: 'file://./data/snapshots',
        aws: { region: 'us-east-1', endpoint: undefined },
      },
    )
  })
})
