import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { after, afterEach, before, describe, it } from 'node:test'
import { offeredProtocols } from '@symphony/client/wire'
import WebSocket from 'ws'
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { refusedStatus, terminateRawSockets } from './helpers/raw-socket.js'
import { assertAlive, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

/** Opens a `ws` socket offering `protocols`; resolves with it and the server's 101 answer. */
function openWithProtocols(
  url: string,
  protocols: string[],
): Promise<{ socket: WebSocket; answer: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols)
    let answer: IncomingMessage | undefined
    socket.once('upgrade', (response) => {
      answer = response
    })
    socket.once('open', () => resolve({ socket, answer: answer as IncomingMessage }))
    socket.once('error', reject)
  })
}

const providers = new Set<WebsocketProvider>()

afterEach(() => {
  for (const provider of providers) {
    provider.destroy()
    provider.doc.destroy() // and with it the awareness' timer
  }
  providers.clear()
  destroyClients()
  terminateRawSockets()
})

describe('the token in Sec-WebSocket-Protocol (kept out of access logs)', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
  })
  after(() => t.stop())

  /** The refusal of an upgrade offering `protocol` (a raw header value) to `room`, plus `query`. */
  const refused = async (room: string, protocol: string, query = '') => {
    const { status, body } = await refusedStatus(`${t.wsUrl}/${room}${query}`, {
      headers: { 'Sec-WebSocket-Protocol': protocol },
    })
    return { status, code: JSON.parse(body).error.code as string }
  }

  it('opens with a valid token protocol, selects exactly "symphony" and never echoes the token', async () => {
    const room = uniqueRoom('subprotocol')
    const token = await signToken({ room, access: 'rw' })
    const { socket, answer } = await openWithProtocols(`${t.wsUrl}/${room}`, offeredProtocols(token))
    assert.equal(socket.protocol, 'symphony')
    assert.equal(answer.headers['sec-websocket-protocol'], 'symphony')
    assert.ok(!JSON.stringify(answer.headers).includes(token.split('.')[2] ?? '?'))
    socket.close()
  })

  it('selects a provider’s own subprotocol when it offers no "symphony" (browsers need one selected)', async () => {
    const room = uniqueRoom('own-subprotocol')
    const token = await signToken({ room, access: 'rw' })
    const { socket, answer } = await openWithProtocols(`${t.wsUrl}/${room}?token=${token}`, [
      'y-custom',
      'v2',
    ])
    assert.equal(socket.protocol, 'y-custom')
    assert.equal(answer.headers['sec-websocket-protocol'], 'y-custom')
    socket.close()
  })

  it('syncs a y-websocket provider that sends its token only as a subprotocol', async () => {
    const room = uniqueRoom('subprotocol-sync')
    const token = await signToken({ room, access: 'rw', sub: 'ada' })
    const doc = new Y.Doc()
    const provider = new WebsocketProvider(t.wsUrl, room, doc, {
      WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
      protocols: offeredProtocols(token),
      disableBc: true,
    })
    providers.add(provider)
    await eventually(() => provider.synced, 'the provider syncs')
    assert.equal(provider.ws?.protocol, 'symphony')
    doc.getMap('m').set('k', 'v')
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getMap('m').get('k') === 'v',
      'the write is applied (rw from the token)',
    )
  })

  it('refuses a bad token with 401 and another room’s with 403, as ?token= is', async () => {
    const room = uniqueRoom('subprotocol-refused')
    const [, bad] = offeredProtocols('not.a.jwt')
    assert.deepEqual(await refused(room, `symphony, ${bad}`), { status: 401, code: 'TOKEN_INVALID' })
    const expired = await signToken({ room, exp: Math.floor(Date.now() / 1000) - 60 })
    assert.equal((await refused(room, offeredProtocols(expired).join(', '))).status, 401)
    const foreign = await signToken({ room: 'some-other-room', access: 'rw' })
    assert.deepEqual(await refused(room, offeredProtocols(foreign).join(', ')), {
      status: 403,
      code: 'ROOM_FORBIDDEN',
    })
    // Only "symphony", no token anywhere: missing, as without the header.
    assert.deepEqual(await refused(room, 'symphony'), { status: 401, code: 'TOKEN_MISSING' })
    assert.deepEqual(await refused(room, 'symphony, symphony-token.'), { status: 401, code: 'TOKEN_MISSING' })
    assert.equal(t.server.manager.loadedRoom(room), undefined, 'no refused room is loaded')
  })

  it('refuses a token in both the header and ?token= with 400 TOKEN_AMBIGUOUS, even when both are valid', async () => {
    const room = uniqueRoom('subprotocol-both')
    const token = await signToken({ room, access: 'rw' })
    assert.deepEqual(await refused(room, offeredProtocols(token).join(', '), `?token=${token}`), {
      status: 400,
      code: 'TOKEN_AMBIGUOUS',
    })
  })

  it('refuses token protocols the server could not answer: without "symphony", or two of them', async () => {
    const room = uniqueRoom('subprotocol-odd')
    const token = await signToken({ room, access: 'rw' })
    const [, tokenProtocol] = offeredProtocols(token)
    assert.deepEqual(await refused(room, `${tokenProtocol}`), { status: 400, code: 'PROTOCOL_INVALID' })
    assert.deepEqual(await refused(room, `symphony, ${tokenProtocol}, symphony-token.x`), {
      status: 400,
      code: 'PROTOCOL_INVALID',
    })
    await assertAlive(t)
  })

  it('still lets a plain y-websocket provider in with ?token= (and selects no protocol)', async () => {
    const room = uniqueRoom('plain-provider')
    const client = await connectSynced(t.wsUrl, room, { token: await signToken({ room, access: 'rw' }) })
    assert.equal(client.provider.ws?.protocol, '')
    client.doc.getMap('m').set('k', 'v')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getMap('m').get('k') === 'v', 'the write')
  })
})

describe('the access check with Authorization: Bearer', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
  })
  after(() => t.stop())

  const check = async (room: string, headers: Record<string, string>, query = '') => {
    const response = await fetch(`${t.httpUrl}/rooms/${room}/access${query}`, { headers })
    assert.equal(response.headers.get('access-control-allow-origin'), '*')
    const body = (await response.json()) as { access?: string; error?: { code: string } }
    return { status: response.status, access: body.access, code: body.error?.code }
  }

  it('answers from the header: granted, 401, 403, and 400 for a token in both places', async () => {
    const room = uniqueRoom('access-header')
    const writer = await signToken({ room, access: 'rw' })
    assert.deepEqual(await check(room, { Authorization: `Bearer ${writer}` }), {
      status: 200,
      access: 'rw',
      code: undefined,
    })
    assert.equal((await check(room, { Authorization: 'Bearer not.a.jwt' })).code, 'TOKEN_INVALID')
    assert.equal((await check(room, { Authorization: `Basic ${writer}` })).status, 401)
    // A proxy's own Basic credentials beside a ?token= leave the query's token in charge.
    assert.equal((await check(room, { Authorization: 'Basic dXNlcjpwYXNz' }, `?token=${writer}`)).status, 200)
    const foreign = await signToken({ room: 'another-room' })
    assert.deepEqual(await check(room, { Authorization: `Bearer ${foreign}` }), {
      status: 403,
      access: undefined,
      code: 'ROOM_FORBIDDEN',
    })
    assert.equal((await check(room, {}, `?token=${writer}`)).status, 200, '?token= still works')
    assert.deepEqual(await check(room, { Authorization: `Bearer ${writer}` }, `?token=${writer}`), {
      status: 400,
      access: undefined,
      code: 'TOKEN_AMBIGUOUS',
    })
  })

  it('answers the CORS preflight a page elsewhere sends before using Authorization', async () => {
    const response = await fetch(`${t.httpUrl}/rooms/${uniqueRoom('preflight')}/access`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example.com',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'authorization',
      },
    })
    assert.equal(response.status, 204)
    assert.equal(response.headers.get('access-control-allow-origin'), '*')
    assert.match(response.headers.get('access-control-allow-headers') ?? '', /authorization/i)
    assert.match(response.headers.get('access-control-allow-methods') ?? '', /GET/)
    const elsewhere = await fetch(`${t.httpUrl}/healthz`, { method: 'OPTIONS' })
    assert.equal(elsewhere.status, 405, 'only the access check answers preflights')
  })
})
