import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import type { MetadataSink } from '../src/ports/metadata-sink.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { openRaw, refusedStatus } from './helpers/raw-socket.js'
import { assertAlive, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

afterEach(cleanUpAfterTest)

/** Sends one raw HTTP upgrade request and returns the status code the server answers with. */
function upgradeStatus(port: number, target: string, headers: Record<string, string> = {}): Promise<number> {
  const lines = [
    `GET ${target} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ]
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${lines.join('\r\n')}\r\n\r\n`))
    let answer = ''
    socket.on('data', (chunk) => {
      answer += chunk.toString()
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)
      if (status) {
        socket.destroy()
        resolve(Number(status[1]))
      }
    })
    socket.on('error', reject)
    socket.on('close', () => reject(new Error(`no answer to ${target.slice(0, 40)}`)))
  })
}

/** Snapshot and journal files on disk, apart from the bystanders' room. */
function writtenFiles(t: TestServer): string[] {
  const files = [...readdirSync(t.snapshotFolder), ...readdirSync(join(t.snapshotFolder, 'journal'))]
  return files.filter((name) => name !== 'journal' && !name.startsWith('bystander-'))
}

/** Sends raw bytes over TCP and returns the first line the server answers (then hangs up). */
function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    let answer = ''
    socket.on('data', (chunk) => {
      answer += chunk.toString()
      const line = answer.indexOf('\r\n')
      if (line === -1) return
      socket.destroy()
      resolve(answer.slice(0, line))
    })
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
  })
}

describe('hostile upgrades: refused at the door, and the server carries on', () => {
  it('refuses 1,000 upgrades without a token with 401, while another room keeps its pace', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const bystanders = await startBystanders(t.wsUrl, {
      token: await signToken({ room: 'bystander-*', access: 'rw' }),
    })
    const statuses = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        upgradeStatus(t.server.port, `/${uniqueRoom('no-token')}-${i}`),
      ),
    )
    assert.deepEqual(new Set(statuses), new Set([401]))
    assertKeptPace(await bystanders.stop())
    const refused = (await t.server.metrics.connectionsRefused.get()).values
    assert.equal(refused.find((value) => value.labels.reason === 'TOKEN_MISSING')?.value, 1_000)
    assert.equal(t.server.manager.roomCount, 1, 'only the bystanders’ room was ever loaded')
    assert.deepEqual(writtenFiles(t), [])
    await assertAlive(t)
  })

  it('refuses a foreign Origin with 403 when an allow-list is set, and lets listed or absent ones in', async () => {
    const t = await startTestServer({ allowedOrigins: ['https://app.example.com'] })
    const room = uniqueRoom('origin')
    assert.equal(await upgradeStatus(t.server.port, `/${room}`, { Origin: 'https://evil.example.com' }), 403)
    assert.equal(
      await upgradeStatus(t.server.port, `/${room}`, { Origin: 'https://app.example.com.evil.io' }),
      403,
    )
    assert.equal(await upgradeStatus(t.server.port, `/${room}`, { Origin: 'null' }), 403)
    const listed = await openRaw(`${t.wsUrl}/${room}`, { origin: 'https://app.example.com' })
    assert.equal(listed.readyState, listed.OPEN)
    const noOrigin = await openRaw(`${t.wsUrl}/${room}`) // not a browser: the token decides
    assert.equal(noOrigin.readyState, noOrigin.OPEN)
    const refused = await refusedStatus(`${t.wsUrl}/${room}`, { origin: 'https://evil.example.com' })
    assert.equal(JSON.parse(refused.body).error.code, 'ORIGIN_NOT_ALLOWED')
  })

  it('refuses a malformed or oversized Sec-WebSocket-Protocol before the token check, and carries on', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('protocol-header')
    const token = await signToken({ room, access: 'rw' })
    const malformed = [
      `symphony, symphony-token.${token}, `, // an empty name
      `symphony,,symphony-token.${token}`,
      `symphony symphony-token.${token}`, // names separated by a space only
      `symphony, symphony-token.${token}/`, // "/" is a separator, not a token character
      `symphony, symphony-token.${token};v=1`, // parameters are not part of a name
      `symphony, symphony, symphony-token.${token}`, // duplicated
      `symphony, symphony-token.${token}, symphony-token.${token}x`, // two tokens
      `symphony-token.${token}`, // a token the server could only answer by echoing it
    ]
    for (const header of malformed) {
      const status = await upgradeStatus(t.server.port, `/${room}`, { 'Sec-WebSocket-Protocol': header })
      assert.equal(status, 400, header.slice(0, 40))
    }
    assert.equal(
      await upgradeStatus(t.server.port, `/${room}`, {
        'Sec-WebSocket-Protocol': `symphony, symphony-token.${'a'.repeat(20 * 1024)}`,
      }),
      431,
      'past the header limit',
    )
    const refused = (await t.server.metrics.connectionsRefused.get()).values
    assert.equal(refused.find((value) => value.labels.reason === 'PROTOCOL_INVALID')?.value, malformed.length)
    assert.equal(t.server.manager.roomCount, 0, 'no room was loaded')
    const fine = { 'Sec-WebSocket-Protocol': `symphony, symphony-token.${token}` }
    assert.equal(await upgradeStatus(t.server.port, `/${room}`, fine), 101)
    await assertAlive(t)
  })

  it('refuses control bytes, dot names and 10 KB names with 400; path-like names are only names', async () => {
    const loaded: string[] = []
    const metadata: MetadataSink = {
      record: (event) => void (event.type === 'room-loaded' && loaded.push(event.room)),
      stats: () => ({ queued: 0, dropped: 0 }),
      close: async () => {},
    }
    const t = await startTestServer({ adapters: { metadata } })
    const targets = [
      '/room%00name',
      '/room%0d%0aSet-Cookie:x',
      '/..',
      '/%2e%2e',
      `/${'a'.repeat(10 * 1024)}`,
      `/${'%F0%9F%98%80'.repeat(129)}`,
    ]
    for (const target of targets) {
      assert.equal(await upgradeStatus(t.server.port, target), 400, target.slice(0, 60))
    }
    // Accepted as the names they decode to; the stores encode them (see room-keys.test.ts).
    const pathLike = {
      '/../../etc/passwd': '../../etc/passwd',
      '/..%2F..%2Fetc%2Fpasswd': '../../etc/passwd',
      '/%2e%2e/%2e%2e/etc': '../../etc',
      '/a\\b': 'a\\b',
    }
    for (const [target, room] of Object.entries(pathLike)) {
      assert.equal(await upgradeStatus(t.server.port, target), 101, target)
      await eventually(() => loaded.includes(room), `${target} is room ${room}`)
    }
    assert.equal(
      await upgradeStatus(t.server.port, `/${'a'.repeat(20 * 1024)}`),
      431,
      'past the header limit',
    )
    assert.deepEqual(new Set(loaded), new Set(Object.values(pathLike)), 'no other room was ever loaded')
    await assertAlive(t)
  })

  it('answers request targets that are not URLs (//, /\\) without dying: odd names, or refused', async () => {
    const t = await startTestServer()
    assert.match(
      await rawHttp(t.server.port, 'GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      / 404 /,
    )
    const upgrade = (target: string) =>
      `GET ${target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'
    // What follows the first slash is the room: "/", "/@", "\\" and "%" are names like any other.
    for (const target of ['//', '//@', '/\\', '/%']) {
      assert.match(await rawHttp(t.server.port, upgrade(target)), / 101 /, target)
    }
    for (const target of ['/?token=%zz', '/..', '/%00']) {
      assert.match(await rawHttp(t.server.port, upgrade(target)), / 400 /, target)
    }
    await assertAlive(t)
  })
})
