import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { connectSynced, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { parseDashboardConfig } from '../src/config.js'
import {
  DASHBOARD_TOKEN,
  type DashboardOverrides,
  type DashboardStack,
  startDashboardStack,
} from './helpers/dashboard-stack.js'

interface Answer {
  status: number
  code: string | undefined
}

/** One request with exactly these headers (`Host` included: fetch would not send a forged one). */
function send(stack: DashboardStack, method: string, path: string, headers: Record<string, string>) {
  const { hostname, port } = new URL(stack.base)
  return new Promise<Answer>((resolve, reject) => {
    const sent = request({ host: hostname, port, method, path, headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        const json = response.headers['content-type']?.includes('json') ? JSON.parse(text) : {}
        resolve({ status: response.statusCode ?? 0, code: json.error?.code })
      })
    })
    sent.on('error', reject).end()
  })
}

/** A dashboard with these settings, and a room with a client in it. */
function withDashboard(overrides: DashboardOverrides) {
  const context = { stack: null as unknown as DashboardStack, port: '', room: uniqueRoom('guarded') }
  before(async () => {
    context.stack = await startDashboardStack({}, overrides)
    context.port = new URL(context.stack.base).port
    await connectSynced(context.stack.sync.wsUrl, context.room)
    // Metadata lands within a flush or two: until then the dashboard knows no server holding it.
    const readable = { host: `localhost:${context.port}`, authorization: `Bearer ${DASHBOARD_TOKEN}` }
    await eventually(
      async () =>
        (await send(context.stack, 'GET', `/api/rooms/${context.room}/state`, readable)).status === 200,
      'the dashboard reads the room',
    )
  })
  after(async () => {
    destroyClients()
    await context.stack.stop()
  })
  return context
}

describe('the token-less dashboard on loopback, against DNS rebinding', () => {
  const dash = withDashboard({ token: null })
  const host = (name: string) => `${name}:${dash.port}`

  it('refuses a Host that is not a loopback name: 421 HOST_NOT_ALLOWED, for the API and the page', async () => {
    for (const path of ['/api/rooms', `/api/rooms/${dash.room}/state`, '/', '/metrics']) {
      const refused = await send(dash.stack, 'GET', path, { host: host('evil.example') })
      assert.deepEqual(refused, { status: 421, code: 'HOST_NOT_ALLOWED' }, path)
    }
    const forwarded = { host: host('evil.example'), 'x-forwarded-host': host('localhost') }
    assert.equal(
      (await send(dash.stack, 'GET', '/api/rooms', forwarded)).status,
      421,
      'X-Forwarded-Host counts not',
    )
    const deletion = await send(dash.stack, 'DELETE', `/api/rooms/${dash.room}`, {
      host: host('evil.example'),
    })
    assert.equal(deletion.status, 421)
    assert.equal(
      (await send(dash.stack, 'GET', '/healthz', { host: host('10.0.0.7') })).status,
      200,
      'health checks',
    )
  })

  it('answers loopback names: localhost, 127.x.x.x and [::1], on any port', async () => {
    for (const name of [
      host('localhost'),
      host('127.0.0.1'),
      host('127.1.2.3'),
      host('[::1]'),
      'localhost:8080',
    ]) {
      assert.equal((await send(dash.stack, 'GET', '/api/rooms', { host: name })).status, 200, name)
    }
    assert.equal(
      (await send(dash.stack, 'GET', `/api/rooms/${dash.room}/state`, { host: host('LOCALHOST') })).status,
      200,
    )
  })

  it('refuses changes a page of another site sends: 403 CROSS_SITE_REQUEST, and deletes nothing', async () => {
    const local = host('127.0.0.1')
    const crossSite: Record<string, string>[] = [
      { origin: 'http://evil.example' },
      { origin: `http://${host('localhost')}` }, // another origin, even of this machine
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: `http://${local}`, 'sec-fetch-site': 'cross-site' },
    ]
    for (const headers of crossSite) {
      const refused = await send(dash.stack, 'DELETE', `/api/rooms/${dash.room}`, { host: local, ...headers })
      assert.deepEqual(refused, { status: 403, code: 'CROSS_SITE_REQUEST' }, JSON.stringify(headers))
    }
    const logout = await send(dash.stack, 'POST', '/logout', { host: local, origin: 'http://evil.example' })
    assert.equal(logout.status, 403)
    const state = await send(dash.stack, 'GET', `/api/rooms/${dash.room}/state`, { host: local })
    assert.equal(state.status, 200, 'the room is still there')
    // Its own page's request (and a script's, which says neither) goes through.
    const own = { host: local, origin: `http://${local}`, 'sec-fetch-site': 'same-origin' }
    assert.equal((await send(dash.stack, 'DELETE', `/api/rooms/${dash.room}`, own)).status, 204)
  })
})

describe('the dashboard with DASHBOARD_ALLOWED_HOSTS', () => {
  const dash = withDashboard({ token: null, allowedHosts: ['dash.example', 'ops.example:8443'] })

  it('answers the names listed (a name on any port, a name:port on that port) and loopback ones', async () => {
    const status = async (host: string) => (await send(dash.stack, 'GET', '/api/rooms', { host })).status
    assert.equal(await status(`dash.example:${dash.port}`), 200)
    assert.equal(await status('dash.example'), 200)
    assert.equal(await status('ops.example:8443'), 200)
    assert.equal(await status(`ops.example:${dash.port}`), 421)
    assert.equal(await status(`evil.example:${dash.port}`), 421)
    assert.equal(await status(`localhost:${dash.port}`), 200)
  })
})

describe('the dashboard with DASHBOARD_TOKEN and no DASHBOARD_ALLOWED_HOSTS', () => {
  const dash = withDashboard({})

  it('answers any Host (the token guards it) but still refuses cross-site changes', async () => {
    const host = `dashboard-alb-123.elb.example:${dash.port}`
    assert.equal((await send(dash.stack, 'GET', '/api/rooms', { host })).status, 401)
    const authorization = `Bearer ${DASHBOARD_TOKEN}`
    assert.equal((await send(dash.stack, 'GET', '/api/rooms', { host, authorization })).status, 200)
    const crossSite = { host, authorization, origin: 'https://evil.example' }
    const refused = await send(dash.stack, 'DELETE', `/api/rooms/${dash.room}`, crossSite)
    assert.deepEqual(refused, { status: 403, code: 'CROSS_SITE_REQUEST' })
  })
})

describe('DASHBOARD_ALLOWED_HOSTS', () => {
  it('takes * or host names with optional ports, comma-separated, and refuses anything else', () => {
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' }
    const parse = (value: string) =>
      parseDashboardConfig({ ...env, DASHBOARD_ALLOWED_HOSTS: value }).allowedHosts
    assert.equal(parseDashboardConfig(env).allowedHosts, undefined)
    assert.equal(parse('*'), 'any')
    assert.deepEqual(parse(' Dash.Example , ops.example:8443,[::2]:3000,10.0.0.7'), [
      'dash.example',
      'ops.example:8443',
      '[::2]:3000',
      '10.0.0.7',
    ])
    for (const bad of ['http://dash.example', 'dash.example/', 'a,,b', '*.example', 'dash example']) {
      assert.throws(() => parse(bad), /^Error: DASHBOARD_ALLOWED_HOSTS: must be \*/, bad)
    }
  })
})
