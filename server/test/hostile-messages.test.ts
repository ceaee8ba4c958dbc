import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, MAX_SYNC_STATUS_PAYLOAD, MESSAGE_SYNC_STATUS } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import { MAX_AWARENESS_CLIENTS_PER_CONNECTION, MAX_PENDING_SYNC_STATUS } from '../src/core/connection.js'
import {
  encodeAwareness,
  encodeAwarenessEntries,
  encodeSyncStatus,
  encodeUpdate,
} from '../src/protocol/codec.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { GatedJournal } from './helpers/controlled-journal.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { deferred } from './helpers/deferred.js'
import { closed, collect, openRaw } from './helpers/raw-socket.js'
import { assertAlive, startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

/** An awareness message for one client whose state is the JSON text `state`. */
function awarenessState(state: string): Uint8Array {
  return encodeAwarenessEntries([{ clientId: 77, clock: 1, state: new TextEncoder().encode(state) }])
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

const hex = (text: string) => new Uint8Array(Buffer.from(text.replaceAll(' ', ''), 'hex'))
const MAX_VARUINT = 'ffffffffffffff7f' // 2^56 - 1: lib0 does not range-check a varint's last byte
const nested = (depth: number): unknown => (depth === 0 ? 'bottom' : [nested(depth - 1)])

/** A Yjs update built through the real API, framed as a y-websocket update message. */
function updateFrom(build: (doc: Y.Doc) => void, remove: (doc: Y.Doc) => Uint8Array | null = () => null) {
  const doc = new Y.Doc()
  build(doc)
  return encodeUpdate(remove(doc) ?? Y.encodeStateAsUpdate(doc))
}

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

describe('hostile messages on an open connection', () => {
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
