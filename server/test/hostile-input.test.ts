import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import type { MetadataSink } from '../src/ports/metadata-sink.js'
import { encodeAwarenessEntries, encodeUpdate } from '../src/protocol/codec.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { closed, openRaw, refusedStatus } from './helpers/raw-socket.js'
import { assertAlive, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

afterEach(cleanUpAfterTest)

/** An awareness message for one client whose state is the JSON text `state`. */
function awarenessState(state: string): Uint8Array {
  return encodeAwarenessEntries([{ clientId: 77, clock: 1, state: new TextEncoder().encode(state) }])
}

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

/** Round trips of a bystander room: none lost, none slowed past what a stall would cause. */
describe('hostile input at the door', () => {
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
})

const hex = (text: string) => new Uint8Array(Buffer.from(text.replaceAll(' ', ''), 'hex'))
const MAX_VARUINT = 'ffffffffffffff7f' // 2^56 - 1: lib0 does not range-check a varint's last byte
const nested = (depth: number): unknown => (depth === 0 ? 'bottom' : [nested(depth - 1)])

/** A Yjs update built through the real API, framed as a y-websocket update message. */
function updateFrom(build: (doc: Y.Doc) => void, remove: (doc: Y.Doc) => Uint8Array | null = () => null) {
  const doc = new Y.Doc()
  build(doc)
  return encodeUpdate(remove(doc) ?? Y.encodeStateAsUpdate(doc))
}

/** The second edit of each of `clients` clients without their first: each waits forever. */
describe('hostile updates', () => {
  it('refuses crafted updates that would poison the document or stall the server, and the room carries on', async () => {
    const t = await startTestServer()
    const room = uniqueRoom('poison')
    const bystanders = await startBystanders(t.wsUrl)
    const neighbour = await connectSynced(t.wsUrl, room)
    neighbour.doc.getText('t').insert(0, 'still here')
    // Each of these, applied, leaves a document that no longer encodes or runs its cleanups, or
    // costs seconds of CPU (found by fuzzing Yjs 13.6 with crafted and mutated updates).
    const poisons: [string, Uint8Array][] = [
      ['a zero-length deleted item', hex('00 01 01 05 00 01 01 01 74 00 00 00')],
      ['a zero-length GC struct', hex('00 02 01 01 01 00 00 00 00')],
      [
        'a clock past 2^53 left waiting',
        hex(`00 02 01 02 0b 1a 04 00 0b ${MAX_VARUINT} 01 61 04 00 0b 1a 01 62 00`),
      ],
      ['a deletion reaching 2^53', hex('00 02 00 01 09 02 01 ff ff ff ff ff ff ff 0f 00 01')],
      ['a struct count of 2^25 in 7 bytes', hex('00 02 01 ff ff ff 0f 01 00')],
      ['map values nested 100 deep', updateFrom((doc) => doc.getMap('m').set('deep', nested(100)))],
      ['an embed nested 100 deep', updateFrom((doc) => doc.getText('t').insertEmbed(0, { x: nested(100) }))],
      ['a subdocument', updateFrom((doc) => doc.getMap('m').set('sub', new Y.Doc()))],
      ['a presence state nested 100 deep', awarenessState(JSON.stringify(nested(100)))],
    ]
    for (const [name, frame] of poisons) {
      const socket = await openRaw(`${t.wsUrl}/${room}`)
      const gone = closed(socket)
      socket.send(frame)
      assert.equal((await gone).code, CloseCode.ProtocolError, name)
      const doc = t.server.manager.loadedRoom(room)?.doc
      assert.ok(doc, 'the room is still loaded')
      assert.doesNotThrow(() => Y.encodeStateAsUpdate(doc), `${name}: the document still encodes`)
      assert.equal(
        (doc as unknown as { _transactionCleanups: unknown[] })._transactionCleanups.length,
        0,
        name,
      )
    }
    neighbour.doc.getText('t').insert(0, 'and writing: ')
    const late = await connectSynced(t.wsUrl, room)
    await eventually(
      () => late.doc.getText('t').toString() === 'and writing: still here',
      'a late joiner syncs',
    )
    assertKeptPace(await bystanders.stop())
    await assertAlive(t)
  })

  it('counts updates whose dependencies never arrive against the size ceiling (4004), so they cannot pile up', async () => {
    const maxDocumentBytes = 64 * 1024
    const t = await startTestServer({ limits: { maxDocumentBytes } })
    const room = uniqueRoom('pending')
    const bystanders = await startBystanders(t.wsUrl)
    const socket = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(socket)
    let sent = 0
    for (; sent < 200 && socket.readyState === socket.OPEN; sent++) {
      // The second half of a client's edits, without the first: it waits for a dependency forever.
      const doc = new Y.Doc()
      doc.getText('t').insert(0, 'x'.repeat(1_000))
      const before = Y.encodeStateVector(doc)
      doc.getText('t').insert(1_000, 'y'.repeat(1_000))
      socket.send(encodeUpdate(Y.encodeStateAsUpdate(doc, before)))
      await new Promise((resolve) => setImmediate(resolve))
    }
    const close = await gone
    assert.equal(close.code, CloseCode.DocumentTooLarge, `closed after ${sent} pending updates`)
    const pending = t.server.manager.loadedRoom(room)?.doc.store.pendingStructs?.update.length ?? 0
    assert.ok(pending <= maxDocumentBytes, `${pending} bytes of pending structs held`)
    assertKeptPace(await bystanders.stop())
    await assertAlive(t)
  })
})
