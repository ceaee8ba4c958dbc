import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from 'jose'
import * as Y from 'yjs'
import { READ_ONLY_REASON } from '../src/core/connection.js'
import { encodeUpdate } from '../src/protocol/codec.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { deferred } from './helpers/deferred.js'
import { serveJwks } from './helpers/jwks.js'
import { closed, collect, openRaw, refusedStatus, terminateRawSockets } from './helpers/raw-socket.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, signWithKey, TEST_SECRET } from './helpers/tokens.js'

type AccessAnswer = {
  room?: string
  access?: string
  userId?: string
  error?: { code: string; message: string }
}

const base64url = (text: string) => Buffer.from(text).toString('base64url')

afterEach(() => {
  destroyClients()
  terminateRawSockets()
})

describe('auth with an HS256 secret', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
  })
  after(() => t.stop())

  const refused = async (room: string, token: string | null) => {
    const query = token === null ? '' : `?token=${encodeURIComponent(token)}`
    const { status, body } = await refusedStatus(`${t.wsUrl}/${room}${query}`)
    return {
      status,
      code: JSON.parse(body).error.code as string,
      message: JSON.parse(body).error.message as string,
    }
  }

  it('refuses a missing, malformed, expired or foreign-key token with 401 before the upgrade', async () => {
    const room = uniqueRoom()
    assert.deepEqual((await refused(room, null)).status, 401)
    assert.equal((await refused(room, null)).code, 'TOKEN_MISSING')
    assert.equal((await refused(room, 'not.a.jwt')).status, 401)
    const expired = await refused(room, await signToken({ room, exp: Math.floor(Date.now() / 1000) - 60 }))
    assert.deepEqual([expired.status, expired.message], [401, 'the token has expired'])
    const foreign = await refused(room, await signToken({ room }, 'another-secret-of-at-least-32-characters'))
    assert.equal(foreign.status, 401)
  })

  it('refuses tokens without exp, with alg "none", or with a tampered payload', async () => {
    const room = uniqueRoom()
    const noExp = await new SignJWT({ room })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(TEST_SECRET))
    assert.equal((await refused(room, noExp)).status, 401)
    const unsigned = `${base64url('{"alg":"none","typ":"JWT"}')}.${base64url(JSON.stringify({ room, exp: 9e9 }))}.`
    assert.equal((await refused(room, unsigned)).status, 401)
    const [header, , signature] = (await signToken({ room: 'other-room', access: 'ro' })).split('.')
    const tampered = `${header}.${base64url(JSON.stringify({ room, access: 'rw', exp: 9e9 }))}.${signature}`
    assert.equal((await refused(room, tampered)).status, 401)
  })

  it('refuses a valid token for another room with 403', async () => {
    const other = await refused(uniqueRoom(), await signToken({ room: 'some-other-room' }))
    assert.deepEqual([other.status, other.code], [403, 'ROOM_FORBIDDEN'])
    const prefix = await refused('team-b:doc', await signToken({ room: 'team-a:*' }))
    assert.equal(prefix.status, 403)
  })

  it('answers GET /rooms/<room>/access with the verdict a browser cannot read from a refused upgrade', async () => {
    const room = uniqueRoom()
    const check = async (target: string) => {
      const response = await fetch(`${t.httpUrl}${target}`)
      assert.equal(response.headers.get('access-control-allow-origin'), '*')
      return { status: response.status, body: (await response.json()) as AccessAnswer }
    }
    const writer = await signToken({ room, access: 'rw', sub: 'ada' })
    assert.deepEqual(await check(`/rooms/${room}/access?token=${writer}`), {
      status: 200,
      body: { room, access: 'rw', userId: 'ada' },
    })
    const expired = await signToken({ room, exp: Math.floor(Date.now() / 1000) - 60 })
    const refusal = await check(`/rooms/${room}/access?token=${expired}`)
    assert.equal(refusal.status, 401)
    assert.deepEqual(refusal.body.error, { code: 'TOKEN_INVALID', message: 'the token has expired' })
    const foreign = await signToken({ room: 'another-room' })
    assert.equal((await check(`/rooms/${room}/access?token=${foreign}`)).body.error?.code, 'ROOM_FORBIDDEN')
    assert.equal((await check(`/rooms/${room}/access`)).body.error?.code, 'TOKEN_MISSING')
    assert.equal((await check('/rooms/bad%0Aname/access')).status, 400)
    assert.equal((await check('/rooms/%ED%A0%80/access')).status, 400, 'escapes that are not UTF-8')
  })

  it('lets an exact or prefix* token in, and its writes reach other clients', async () => {
    const room = `team-a:${uniqueRoom()}`
    const writer = await connectSynced(t.wsUrl, room, {
      token: await signToken({ room: 'team-a:*', access: 'rw' }),
    })
    const reader = await connectSynced(t.wsUrl, room, {
      token: await signToken({ room, access: 'rw', sub: 'bob' }),
    })
    writer.doc.getMap('m').set('k', 'v')
    await eventually(() => reader.doc.getMap('m').get('k') === 'v', 'the write reaches the other client')
  })

  it("never applies a read-only connection's updates, and tells it why", async () => {
    const room = uniqueRoom()
    const writer = await connectSynced(t.wsUrl, room, { token: await signToken({ room, access: 'rw' }) })
    writer.doc.getText('t').insert(0, 'shared')
    const readOnly = await connectSynced(t.wsUrl, room, { token: await signToken({ room, access: 'ro' }) })
    await eventually(() => readOnly.doc.getText('t').toString() === 'shared', 'read-only clients still read')
    readOnly.doc.getText('t').insert(0, 'vandal ')

    const raw = await openRaw(`${t.wsUrl}/${room}?token=${await signToken({ room })}`) // no access claim: ro
    const received = collect(raw)
    const attempt = new Y.Doc()
    attempt.getText('t').insert(0, 'raw vandal ')
    raw.send(encodeUpdate(Y.encodeStateAsUpdate(attempt)))
    await eventually(() => received.some((m) => m[0] === 2), 'a permission-denied message arrives')
    const denied = received.find((m) => m[0] === 2)
    assert.ok(denied?.toString().includes(READ_ONLY_REASON))

    writer.doc.getText('t').insert(6, '!') // a marker write after the refused ones
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'shared!',
      'marker',
    )
    assert.equal(writer.doc.getText('t').toString(), 'shared!', 'no read-only write reached anyone')
    const metrics = await t.server.metrics.registry.getSingleMetricAsString('symphony_writes_denied_total')
    assert.match(metrics, /symphony_writes_denied_total [1-9]/)
  })

  it('closes a connection when its token expires, with 4006 (reconnect with a fresh token)', async () => {
    const room = uniqueRoom()
    const exp = Math.ceil(Date.now() / 1000) + 2
    const socket = await openRaw(`${t.wsUrl}/${room}?token=${await signToken({ room, access: 'rw', exp })}`)
    const ended = closed(socket)
    const close = await ended
    assert.equal(close.code, CloseCode.TokenExpired)
    assert.ok(Date.now() >= exp * 1000 - 5, 'not before the expiry')
    assert.ok(Date.now() < exp * 1000 + 1_000, 'at the expiry')
  })

  it('does not count a read-only client that only reads as a write attempt', async () => {
    const room = uniqueRoom()
    const denied = async () => (await t.server.metrics.writesDenied.get()).values[0]?.value ?? 0
    const before = await denied()
    const reader = await connectSynced(t.wsUrl, room, { token: await signToken({ room, access: 'ro' }) })
    reader.provider.awareness.setLocalStateField('cursor', { x: 1 })
    const writer = await connectSynced(t.wsUrl, room, { token: await signToken({ room, access: 'rw' }) })
    await eventually(
      () => writer.provider.awareness.getStates().has(reader.doc.clientID),
      'presence is allowed',
    )
    assert.equal(await denied(), before)
  })
})

describe('auth with public keys', () => {
  it('verifies tokens against a PEM public key and refuses other keys and HS256 confusion', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
    const other = await generateKeyPair('ES256')
    const pem = await exportSPKI(publicKey)
    const t = await startTestServer({ auth: { mode: 'jwt', publicKeyPem: pem } })
    try {
      const room = uniqueRoom()
      const sign = (key: Parameters<typeof signWithKey>[1]) =>
        signWithKey({ room, access: 'rw' }, key, { alg: 'ES256' })
      const client = await connectSynced(t.wsUrl, room, { token: await sign(privateKey) })
      assert.equal(client.provider.wsconnected, true)
      assert.equal(
        (await refusedStatus(`${t.wsUrl}/${room}?token=${await sign(other.privateKey)}`)).status,
        401,
      )
      const confused = await signToken({ room }, pem) // the public key used as an HMAC secret
      assert.equal((await refusedStatus(`${t.wsUrl}/${room}?token=${confused}`)).status, 401)
    } finally {
      destroyClients()
      await t.stop()
    }
  })

  it('refuses with 503 an upgrade whose token check outlasts the start of shutdown', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' }
    const requested = deferred()
    const release = deferred()
    const jwks = await serveJwks(jwk, async () => {
      requested.resolve()
      await release.promise // the key set arrives only after shutdown has begun
    })
    const t = await startTestServer({ auth: { mode: 'jwt', jwksUrl: jwks.url } })
    try {
      const room = uniqueRoom()
      const token = await signWithKey({ room, access: 'rw' }, privateKey, { alg: 'ES256', kid: 'k' })
      const attempt = refusedStatus(`${t.wsUrl}/${room}?token=${token}`)
      await requested.promise
      const stopped = t.stop()
      release.resolve()
      assert.equal((await attempt).status, 503)
      await stopped
      assert.equal(t.server.manager.roomCount, 0)
    } finally {
      jwks.close()
    }
  })

  it('answers 503 with Retry-After while the key set is unreachable, and 401 only for bad tokens', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' }
    let outage: number | 'hang-up' | null = 500
    const jwks = await serveJwks(jwk, async () => outage ?? undefined)
    const t = await startTestServer({ auth: { mode: 'jwt', jwksUrl: jwks.url } })
    try {
      const room = uniqueRoom()
      const token = await signWithKey({ room, access: 'rw' }, privateKey, { alg: 'ES256', kid: 'k' })
      for (const state of [500, 503, 'hang-up'] as const) {
        outage = state
        const refused = await fetch(`${t.httpUrl}/rooms/${room}/access?token=${token}`)
        assert.equal(refused.status, 503, `key set answering ${state}`)
        assert.equal(refused.headers.get('retry-after'), '5')
        const body = (await refused.json()) as AccessAnswer
        assert.equal(body.error?.code, 'AUTH_UNAVAILABLE')
        const upgrade = await refusedStatus(`${t.wsUrl}/${room}?token=${token}`)
        assert.equal(upgrade.status, 503)
      }
      outage = null // the provider is back
      const client = await connectSynced(t.wsUrl, room, { token })
      assert.equal(client.provider.wsconnected, true)
      const stranger = await signWithKey({ room }, privateKey, { alg: 'ES256', kid: 'unknown-key' })
      assert.equal((await refusedStatus(`${t.wsUrl}/${room}?token=${stranger}`)).status, 401)
    } finally {
      destroyClients()
      await t.stop()
      jwks.close()
    }
  })

  it('verifies tokens against a JWKS URL', async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig' }
    const jwks = await serveJwks(jwk)
    const t = await startTestServer({ auth: { mode: 'jwt', jwksUrl: jwks.url } })
    try {
      const room = uniqueRoom()
      const token = await signWithKey({ room, access: 'rw' }, privateKey, { alg: 'RS256', kid: 'key-1' })
      const client = await connectSynced(t.wsUrl, room, { token })
      assert.equal(client.provider.wsconnected, true)
      assert.equal((await refusedStatus(`${t.wsUrl}/${room}?token=${await signToken({ room })}`)).status, 401)
    } finally {
      destroyClients()
      await t.stop()
      jwks.close()
    }
  })
})
