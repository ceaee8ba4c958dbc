import assert from 'node:assert/strict'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { afterEach, describe, it } from 'node:test'
import { eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { serveJwks } from '@symphony/test-helpers/jwks'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { startTestServer, stopTestServers, type TestServer } from '@symphony/test-helpers/test-server'
import { signToken, TEST_SECRET } from '@symphony/test-helpers/tokens'
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose'
import {
  createToken,
  MAX_INFO_BYTES,
  MAX_NAME_CHARS,
  MAX_SUBJECT_CHARS,
  type TokenOptions,
} from '../src/index.js'

afterEach(async () => {
  await destroyNodeClients()
  await stopTestServers()
})

/** Two clients with tokens from `mint` share an edit through the server `t`. */
async function assertTokensOpenTheRoom(
  t: TestServer,
  mint: (room: string) => Promise<string>,
): Promise<void> {
  const room = uniqueRoom('minted')
  const a = nodeClient(t.wsUrl, { getToken: () => mint(room) }).enter(room)
  const b = nodeClient(t.wsUrl, { getToken: () => mint(room) }).enter(room)
  await Promise.all([a.whenSynced(), b.whenSynced()])
  a.map('m').set('k', 'v')
  await eventually(() => b.map('m').get('k') === 'v', 'the edit reaches the other client')
}

/** The access check's verdict for a token and room (what the server says before an upgrade). */
async function access(t: TestServer, room: string, token: string) {
  const response = await fetch(`${t.httpUrl}/rooms/${encodeURIComponent(room)}/access?token=${token}`)
  return { status: response.status, body: await response.json() }
}

const pem = (key: KeyObject) => key.export({ format: 'pem', type: 'spki' }).toString()

describe('createToken against a real server', () => {
  it('signs with the HS256 secret', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    await assertTokensOpenTheRoom(t, (room) =>
      createToken({ room, access: 'rw', userId: 'ada', expiresIn: '1h', secret: TEST_SECRET }),
    )
  })

  for (const { type, options, algorithm } of [
    { type: 'rsa', options: { modulusLength: 2048 }, algorithm: 'RS256' },
    { type: 'ec', options: { namedCurve: 'P-256' }, algorithm: 'ES256' },
    { type: 'ed25519', options: {}, algorithm: 'EdDSA' },
  ] as const) {
    it(`signs with a ${type} private key (${algorithm}), as a PEM string or a KeyObject`, async () => {
      const { publicKey, privateKey } = generateKeyPairSync(
        type as 'rsa',
        options as { modulusLength: number },
      )
      const t = await startTestServer({ auth: { mode: 'jwt', publicKeyPem: pem(publicKey) } })
      const privatePem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
      let useString = false
      await assertTokensOpenTheRoom(t, async (room) => {
        useString = !useString
        const token = await createToken({
          room,
          access: 'rw',
          userId: 'ada',
          expiresIn: 600,
          privateKey: useString ? privatePem : privateKey,
        })
        assert.equal(decodeProtectedHeader(token).alg, algorithm)
        return token
      })
    })
  }

  it('signs with a WebCrypto key and a key id, for a server reading a JWKS', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256')
    const jwks = await serveJwks({ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' })
    const t = await startTestServer({ auth: { mode: 'jwt', jwksUrl: jwks.url } })
    await assertTokensOpenTheRoom(t, (room) =>
      createToken({ room, access: 'rw', userId: 'ada', expiresIn: '5m', privateKey, keyId: 'k1' }),
    )
    jwks.close()
  })

  it('writes exactly the claims the server reads: room, access, sub, exp, iat, name, info', async () => {
    const before = Math.floor(Date.now() / 1000)
    const token = await createToken({
      room: ['team-7/*', 'lobby'],
      access: 'ro',
      userId: 'u-42',
      name: 'Ada Lovelace',
      info: { avatar: 'https://example.com/a.png', team: 7 },
      expiresIn: 90,
      secret: TEST_SECRET,
    })
    const { exp, iat, ...claims } = decodeJwt(token)
    assert.deepEqual(claims, {
      room: ['team-7/*', 'lobby'],
      access: 'ro',
      sub: 'u-42',
      name: 'Ada Lovelace',
      info: { avatar: 'https://example.com/a.png', team: 7 },
    })
    assert.ok(exp !== undefined && exp >= before + 90 && exp <= before + 92, `exp ${exp}`)
    assert.ok(iat !== undefined && iat >= before)
  })

  it('grants prefix patterns on the decoded room name, and only what they match', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const token = await createToken({
      room: 'team-7*',
      access: 'rw',
      userId: 'ada',
      expiresIn: 60,
      secret: TEST_SECRET,
    })
    assert.equal((await access(t, 'team-7', token)).status, 200)
    assert.equal((await access(t, 'team-7-board', token)).status, 200)
    const refused = await access(t, 'team-8', token)
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error.code, 'ROOM_FORBIDDEN')
  })

  it("gives a read-only token's holder the room without its edits", async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('ro')
    const mint = (access: 'rw' | 'ro') =>
      createToken({ room, access, userId: access, expiresIn: 60, secret: TEST_SECRET })
    const reader = nodeClient(t.wsUrl, { getToken: () => mint('ro') }).enter(room)
    const writer = nodeClient(t.wsUrl, { getToken: () => mint('rw') }).enter(room)
    const errors = recordErrors(reader)
    await Promise.all([reader.whenSynced(), writer.whenSynced()])
    reader.map('m').set('reader', 1)
    writer.map('m').set('writer', 1)
    await eventually(() => reader.map('m').get('writer') === 1, 'the reader receives')
    await eventually(() => errors.some((e) => e.code === 'READ_ONLY'), 'the reader is told')
    assert.equal(writer.map('m').has('reader'), false)
  })

  it('reports the user the server sees, and the server refuses name and info past their limits', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('who')
    const token = await createToken({
      room,
      access: 'rw',
      userId: 'u-1',
      name: 'Ada',
      expiresIn: 60,
      secret: TEST_SECRET,
    })
    assert.deepEqual((await access(t, room, token)).body, { room, access: 'rw', userId: 'u-1' })
    for (const claims of [
      { name: 'x'.repeat(MAX_NAME_CHARS + 1) },
      { name: 'tab\there' },
      { info: { blob: 'x'.repeat(MAX_INFO_BYTES) } },
      { info: ['not', 'an', 'object'] },
      { sub: 'symphony:api' }, // the server's own subjects (REST writes are bound to this one)
      { sub: 'x'.repeat(MAX_SUBJECT_CHARS + 1) }, // copied into every binding it makes
      { sub: '' },
      { sub: 'line\nbreak' },
    ]) {
      const forged = await signToken({ room, access: 'rw', sub: 'u-1', ...claims })
      const refused = await access(t, room, forged)
      assert.equal(refused.status, 401, JSON.stringify(claims).slice(0, 40))
      assert.match(refused.body.error.message, /the (name|info|sub) claim/)
    }
  })
})

describe('createToken refuses what the server would refuse, with clear errors', () => {
  const valid: TokenOptions = { room: 'r', access: 'rw', userId: 'u', expiresIn: 60, secret: TEST_SECRET }
  for (const [what, options, message] of [
    ['an empty room', { room: '' }, /room must be/],
    ['an empty room list', { room: [] }, /room must be/],
    ['another access', { access: 'admin' }, /access must be 'rw' or 'ro'/],
    ['no user id', { userId: '' }, /userId must be/],
    ['a user id of the server’s', { userId: 'symphony:server' }, /may not start with "symphony:"/],
    ['a long user id', { userId: 'é'.repeat(MAX_SUBJECT_CHARS + 1) }, /sub claim must be 1-255 characters/],
    [
      'a user id with control characters',
      { userId: 'a\tb' },
      /sub claim must not contain control characters/,
    ],
    ['a long name', { name: 'é'.repeat(MAX_NAME_CHARS + 1) }, /name claim must be 1-128 characters/],
    ['a name with control characters', { name: 'a\nb' }, /control characters/],
    ['info that is not an object', { info: 'x' }, /info claim must be a JSON object/],
    ['info over the limit', { info: { x: 'y'.repeat(MAX_INFO_BYTES) } }, /bytes of JSON/],
    ['a negative lifetime', { expiresIn: -5 }, /expiresIn must be a positive/],
    ['an empty secret', { secret: '' }, /secret must be/],
  ] as const) {
    it(`refuses ${what}`, async () => {
      await assert.rejects(createToken({ ...valid, ...options } as TokenOptions), {
        name: 'TypeError',
        message,
      })
    })
  }

  it('accepts a user id of 255 four-byte characters', async () => {
    const token = await createToken({ ...valid, userId: '😀'.repeat(MAX_SUBJECT_CHARS) })
    assert.equal(decodeJwt(token).sub, '😀'.repeat(MAX_SUBJECT_CHARS))
  })

  it('accepts a name of 128 four-byte characters', async () => {
    const token = await createToken({ ...valid, name: '😀'.repeat(MAX_NAME_CHARS) })
    assert.equal(decodeJwt(token).name, '😀'.repeat(MAX_NAME_CHARS))
  })
})
