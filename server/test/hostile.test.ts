import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, MAX_SYNC_STATUS_PAYLOAD, MESSAGE_SYNC_STATUS } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import { MAX_AWARENESS_CLIENTS_PER_CONNECTION, MAX_PENDING_SYNC_STATUS } from '../src/core/connection.js'
import { encodeAwareness, encodeSyncStatus, encodeUpdate } from '../src/protocol/codec.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { GatedJournal } from './helpers/controlled-journal.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { deferred } from './helpers/deferred.js'
import { closed, collect, openRaw } from './helpers/raw-socket.js'
import { assertAlive, startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

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

function awarenessFor(ids: number[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, ids.length)
  for (const id of ids) {
    encoding.writeVarUint(encoder, id)
    encoding.writeVarUint(encoder, 1)
    encoding.writeVarString(encoder, JSON.stringify({ cursor: { x: id } }))
  }
  return encodeAwareness(encoding.toUint8Array(encoder))
}

describe('hostile input', () => {
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

  it('survives a refused connection that sends invalid frames before it is gone', async () => {
    const t = await startTestServer({ limits: { maxConnectionsPerRoom: 1 } })
    const room = uniqueRoom()
    await openRaw(`${t.wsUrl}/${room}`)
    const refused = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(refused)
    // An unmasked client frame is a protocol violation that makes ws emit 'error' server-side.
    const raw = (refused as unknown as { _socket: import('node:net').Socket })._socket
    raw.write(Buffer.from([0x82, 0x02, 0x01, 0x02]))
    assert.ok([CloseCode.RoomFull, CloseCode.ProtocolError, 1006].includes((await gone).code))
    await assertAlive(t)
  })

  it(`closes a connection that speaks for more than ${MAX_AWARENESS_CLIENTS_PER_CONNECTION} awareness clients`, async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    const flooder = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(flooder)
    flooder.send(awarenessFor([1, 2, 3]))
    flooder.send(awarenessFor(Array.from({ length: 500 }, (_, i) => 1000 + i)))
    assert.equal((await gone).code, CloseCode.ProtocolError)
    const states = t.server.manager.loadedRoom(room)?.presence.size ?? 0
    assert.ok(states <= MAX_AWARENESS_CLIENTS_PER_CONNECTION, `${states} presence entries`)
    await eventually(() => (t.server.manager.loadedRoom(room)?.presence.size ?? 0) === 0, 'removed on close')
  })

  it('closes a client that asks for sync faster than allowed (4002)', async () => {
    const t = await startTestServer()
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const gone = closed(socket)
    for (let i = 0; i < 50; i++) socket.send(new Uint8Array([0, 0, 1, 0]))
    assert.equal((await gone).code, CloseCode.RateLimited)
  })

  it('closes a client that sends more than its buffer cap while the room loads (1013)', async () => {
    const store = new ControlledSnapshotStore(new FileSnapshotStore(mkdtempSync(join(tmpdir(), 'snap-'))))
    const gate = deferred()
    store.loadGate = gate.promise
    const t = await startTestServer({
      adapters: { snapshots: store },
      limits: { maxBufferedBytes: 64 * 1024 },
    })
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const gone = closed(socket)
    for (let i = 0; i < 10; i++) socket.send(new Uint8Array(16 * 1024).fill(7))
    assert.equal((await gone).code, CloseCode.TryAgainLater)
    gate.resolve()
  })
})

describe('hostile sync-status requests', () => {
  it('closes a connection whose sync-status payload passes the cap, and keeps serving', async () => {
    const t = await startTestServer()
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}?syncStatus=1`)
    const gone = closed(socket)
    socket.send(encodeSyncStatus(new Uint8Array(MAX_SYNC_STATUS_PAYLOAD + 1)))
    assert.equal((await gone).code, CloseCode.ProtocolError)
    await assertAlive(t)
  })

  it(`closes a connection with more than ${MAX_PENDING_SYNC_STATUS} requests waiting on a slow journal`, async () => {
    const journal = new GatedJournal(new FileUpdateJournal(mkdtempSync(join(tmpdir(), 'journal-'))))
    const t = await startTestServer({ adapters: { journal } })
    const room = uniqueRoom()
    const socket = await openRaw(`${t.wsUrl}/${room}?syncStatus=1`)
    const frames = collect(socket)
    const gone = closed(socket)
    const doc = new Y.Doc()
    doc.getMap('m').set('k', 1)
    socket.send(encodeUpdate(Y.encodeStateAsUpdate(doc)))
    for (let i = 0; i <= MAX_PENDING_SYNC_STATUS; i++) socket.send(encodeSyncStatus(new Uint8Array([i + 1])))
    assert.equal((await gone).code, CloseCode.ProtocolError)
    journal.openGate()
    const answers = frames.filter((f) => f[0] === MESSAGE_SYNC_STATUS && f.length > 2)
    assert.equal(answers.length, 0, 'nothing answered before the journal held the update')
    await assertAlive(t)
  })
})
