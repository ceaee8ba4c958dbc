import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { minimalUpdate } from '../../loadtest/src/bench/minimal-structs.js'
import { encodeSyncStep1, encodeUpdate } from '../src/protocol/codec.js'
import { documentStructs } from '../src/protocol/update-structs.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { closed, openRaw, refusedStatus } from './helpers/raw-socket.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

function updateFrame(fill: (doc: Y.Doc) => void): Uint8Array {
  const doc = new Y.Doc()
  fill(doc)
  return encodeUpdate(Y.encodeStateAsUpdate(doc))
}

/** A peer in another room keeps syncing: one connection's trouble stays its own. */
async function assertOtherRoomsUnaffected(t: TestServer): Promise<void> {
  const room = uniqueRoom('bystander')
  const a = await connectSynced(t.wsUrl, room)
  const b = await connectSynced(t.wsUrl, room)
  a.doc.getMap('m').set('still', 'fine')
  await eventually(() => b.doc.getMap('m').get('still') === 'fine', 'a bystander room still syncs')
}

describe('limits', () => {
  it('closes with 1009 on an oversized message, as soon as its header arrives', async () => {
    const t = await startTestServer({ limits: { maxMessageBytes: 64 * 1024 } })
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const close = closed(socket)
    // A masked binary frame header announcing 10 MiB, then only 4 bytes of it.
    const header = Buffer.alloc(14)
    header[0] = 0x82
    header[1] = 0x80 | 127
    header.writeBigUInt64BE(10n * 1024n * 1024n, 2)
    const raw = (socket as unknown as { _socket: import('node:net').Socket })._socket
    raw.write(Buffer.concat([header, Buffer.from([1, 2, 3, 4])]))
    assert.equal((await close).code, CloseCode.MessageTooBig)
    const whole = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const closeWhole = closed(whole)
    whole.send(randomBytes(100 * 1024))
    assert.equal((await closeWhole).code, CloseCode.MessageTooBig)
    const closedByServer = await t.server.metrics.connectionsClosed.get()
    const tooBig = closedByServer.values.find((v) => v.labels.code === 'MessageTooBig')
    assert.equal(tooBig?.value, 2, 'each oversized message counted once')
    await assertOtherRoomsUnaffected(t)
  })

  it('refuses invalid room names with 400 before the upgrade, and takes the longest valid ones', async () => {
    const t = await startTestServer({ limits: {} })
    const names = [
      '',
      'x'.repeat(129),
      encodeURIComponent('😀'.repeat(129)),
      '%00',
      'a%0Ab',
      encodeURIComponent('a\u0085b'), // a C1 control character
      '%7F',
      '%2E%2E',
      '.',
      '%ED%A0%80', // escapes of half a surrogate pair: not UTF-8, so not a name (nor a raw one)
      '%C0%AF', // an overlong "/"
      'a%FFb',
    ]
    for (const name of names) {
      const { status, body } = await refusedStatus(`${t.wsUrl}/${name}`)
      assert.equal(status, 400, name)
      assert.equal(JSON.parse(body).error.code, 'ROOM_NAME_INVALID')
    }
    for (const longest of ['x'.repeat(128), '😀'.repeat(128)]) {
      const client = await connectSynced(t.wsUrl, longest)
      assert.equal(client.provider.wsconnected, true)
      assert.ok(t.server.manager.loadedRoom(longest), 'the decoded name is the room')
    }
  })

  it('closes only the offending connection on malformed frames, text frames and unappliable updates', async () => {
    const t = await startTestServer({ limits: {} })
    const room = uniqueRoom()
    const neighbour = await connectSynced(t.wsUrl, room)
    const cases: [string | Uint8Array, number][] = [
      [new Uint8Array([0, 9, 1, 2]), CloseCode.ProtocolError], // unknown sync type
      [new Uint8Array([0, 2, 0x80]), CloseCode.ProtocolError], // truncated varint
      [new Uint8Array([1, 5, 1, 2]), CloseCode.ProtocolError], // awareness, truncated
      [new Uint8Array([0, 2, 4, 0xff, 0xff, 0xff, 0xff]), CloseCode.ProtocolError], // update bytes Yjs rejects
      [new Uint8Array([1, 4, 1, 1, 1, 0x7b]), CloseCode.ProtocolError], // awareness state that is not JSON
      ['hello', CloseCode.UnsupportedData],
    ]
    for (const [frame, expected] of cases) {
      const socket = await openRaw(`${t.wsUrl}/${room}`)
      const close = closed(socket)
      socket.send(frame)
      assert.equal((await close).code, expected, `frame ${String(frame)}`)
    }
    neighbour.doc.getMap('m').set('alive', true)
    const late = await connectSynced(t.wsUrl, room)
    await eventually(() => late.doc.getMap('m').get('alive') === true, 'the room still works')
    await assertOtherRoomsUnaffected(t)
  })

  it('limits connections per room (4001) and per server (1013)', async () => {
    const t = await startTestServer({ limits: { maxConnectionsPerRoom: 2, maxConnections: 3 } })
    const room = uniqueRoom()
    await openRaw(`${t.wsUrl}/${room}`)
    await openRaw(`${t.wsUrl}/${room}`)
    const third = await openRaw(`${t.wsUrl}/${room}`)
    assert.equal((await closed(third)).code, CloseCode.RoomFull)
    await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const fourth = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    assert.equal((await closed(fourth)).code, CloseCode.TryAgainLater)
  })

  it('closes a connection that sends faster than its message rate (4002)', async () => {
    const t = await startTestServer({ limits: { messagesPerSecond: 20, messageBurst: 20 } })
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const close = closed(socket)
    for (let i = 0; i < 100; i++) socket.send(new Uint8Array([3]))
    assert.equal((await close).code, CloseCode.RateLimited)
    const calm = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    for (let i = 0; i < 10; i++) calm.send(new Uint8Array([3]))
    calm.send(new Uint8Array([3]))
    assert.equal(calm.readyState, calm.OPEN)
    await assertOtherRoomsUnaffected(t)
  })

  it('closes a consumer that stops reading once its backlog passes the cap (4003)', async () => {
    const t = await startTestServer({ limits: { maxBufferedBytes: 256 * 1024 } })
    const room = uniqueRoom()
    const slow = await openRaw(`${t.wsUrl}/${room}`)
    const slowClosed = closed(slow)
    const rawSlow = (slow as unknown as { _socket: import('node:net').Socket })._socket
    rawSlow.pause() // stop reading: the kernel buffers fill, then the server's backlog grows
    const writer = await connectSynced(t.wsUrl, room)
    const slowClosedByServer = () => t.server.manager.loadedRoom(room)?.connections.size === 1
    for (let i = 0; i < 2_000 && !slowClosedByServer(); i++) {
      writer.doc.getMap('m').set('blob', randomBytes(48 * 1024).toString('base64'))
      if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve))
    }
    await eventually(slowClosedByServer, 'the server drops the slow consumer')
    rawSlow.resume()
    assert.ok([CloseCode.SlowConsumer, 1006].includes((await slowClosed).code))
    const metric = await t.server.metrics.registry.getSingleMetricAsString(
      'symphony_connections_closed_by_server_total',
    )
    assert.match(metric, /code="SlowConsumer"} 1/)
    assert.equal(writer.provider.wsconnected, true, 'the fast writer is untouched')
  })

  it('closes sockets that stop answering pings (4008, counted), and keeps those that answer', async () => {
    const t = await startTestServer({ limits: { pingIntervalMs: 100 } })
    const room = uniqueRoom()
    const dead = await openRaw(`${t.wsUrl}/${room}`, { autoPong: false })
    const alive = await openRaw(`${t.wsUrl}/${room}`)
    let pingsAnswered = 0
    alive.on('ping', () => pingsAnswered++)
    const deadClosed = await closed(dead)
    assert.equal(deadClosed.code, CloseCode.Unresponsive)
    assert.match(
      await t.server.metrics.registry.getSingleMetricAsString('symphony_connections_closed_by_server_total'),
      /code="Unresponsive"} 1/,
    )
    await eventually(() => pingsAnswered >= 3, 'three more pings')
    assert.equal(alive.readyState, alive.OPEN)
  })

  it('serves a client still reading a big document for many ping intervals, and closes one that stops reading', async () => {
    const MiB = 1024 * 1024
    const size = 24 * MiB // more than the kernel's buffers hold: part of it waits in the server
    const t = await startTestServer({
      limits: { pingIntervalMs: 100, maxDocumentBytes: 64 * MiB, maxBufferedBytes: 64 * MiB },
    })
    const room = uniqueRoom()
    const writer = await connectSynced(t.wsUrl, room)
    const text = 'x'.repeat(MiB / 2)
    for (let part = 0; part < size / (MiB / 2); part++) writer.doc.getText(`t${part}`).insert(0, text)
    await eventually(
      () => (t.server.manager.loadedRoom(room)?.approximateBytes ?? 0) > size,
      'stored',
      20_000,
    )
    writer.destroy()
    // Two readers that read a little at a time: the download takes several ping intervals, and
    // their pongs come back only after it. One of them stops reading after its first megabyte.
    const keeps = await openRaw(`${t.wsUrl}/${room}`)
    const stops = await openRaw(`${t.wsUrl}/${room}`)
    const tcpOf = (reader: typeof keeps) => (reader as unknown as { _socket: Socket })._socket
    const [keepsTcp, stopsTcp] = [tcpOf(keeps), tcpOf(stops)]
    keepsTcp.pause()
    stopsTcp.pause()
    const received = { keeps: 0, stops: 0 }
    keeps.on('message', (data: Buffer) => {
      received.keeps += data.length
    })
    stops.on('message', (data: Buffer) => {
      received.stops += data.length
    })
    const stopsClosed = closed(stops)
    for (const reader of [keeps, stops]) reader.send(encodeSyncStep1(Y.encodeStateVector(new Y.Doc())))
    const started = Date.now()
    /** Lets the socket take one chunk (what one read returns), then stops it again. */
    const readOneChunk = (socket: Socket) =>
      new Promise<void>((resolve) => {
        const done = () => {
          socket.pause()
          socket.off('data', done).off('close', done)
          resolve()
        }
        socket.on('data', done).on('close', done)
        socket.resume()
      })
    while (received.keeps < size && keeps.readyState === keeps.OPEN) {
      await readOneChunk(keepsTcp)
      if (received.stops < MiB) await readOneChunk(stopsTcp)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    const intervals = (Date.now() - started) / 100
    assert.ok(intervals > 3, `the download took ${intervals.toFixed(1)} ping intervals`)
    keepsTcp.resume()
    assert.equal(keeps.readyState, keeps.OPEN, 'the reader that kept reading is served')
    await eventually(
      async () =>
        /code="Unresponsive"} 1/.test(
          await t.server.metrics.registry.getSingleMetricAsString(
            'symphony_connections_closed_by_server_total',
          ),
        ),
      'the one that stopped reading is closed',
    )
    stopsTcp.resume()
    assert.ok([CloseCode.Unresponsive, 1006].includes((await stopsClosed).code))
    assert.equal(keeps.readyState, keeps.OPEN)
  })

  it('refuses updates past the document size ceiling with 4004 and keeps the document', async () => {
    const t = await startTestServer({ limits: { maxDocumentBytes: 20 * 1024 } })
    const room = uniqueRoom()
    const writer = await openRaw(`${t.wsUrl}/${room}`)
    writer.send(updateFrame((doc) => doc.getText('t').insert(0, 'a'.repeat(12 * 1024))))
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 12 * 1024,
      'first fits',
    )
    const close = closed(writer)
    writer.send(updateFrame((doc) => doc.getText('u').insert(0, 'b'.repeat(12 * 1024))))
    const { code, reason } = await close
    assert.equal(code, CloseCode.DocumentTooLarge)
    assert.match(reason, /exceed/)
    const reader = await connectSynced(t.wsUrl, room)
    await eventually(() => reader.doc.getText('t').length === 12 * 1024, 'the stored part is intact')
    assert.equal(reader.doc.getText('u').length, 0)
  })

  it('refuses updates that would give the document more structs than its ceiling with 4004, and keeps it', async () => {
    const t = await startTestServer({ limits: { maxDocumentStructs: 5_000 } })
    const room = uniqueRoom()
    const doc = () => t.server.manager.loadedRoom(room)?.doc
    const writer = await openRaw(`${t.wsUrl}/${room}`)
    writer.send(encodeUpdate(minimalUpdate('gc-item', { structs: 3_001, client: 1 })))
    await eventually(() => Y.getState((doc() ?? new Y.Doc()).store, 1) > 0, 'the first fits')
    writer.send(encodeUpdate(minimalUpdate('gc-item', { structs: 1_501, client: 2 })))
    await eventually(() => Y.getState((doc() ?? new Y.Doc()).store, 2) > 0, 'the second fits')
    assert.equal(documentStructs(doc() as Y.Doc), 4_518, 'two clients (8 each) of 3,001 and 1,501 structs')
    const close = closed(writer)
    writer.send(encodeUpdate(minimalUpdate('gc-item', { structs: 501, client: 3 })))
    const { code, reason } = await close
    assert.equal(code, CloseCode.DocumentTooLarge)
    assert.match(reason, /exceed 5000 structs/)
    assert.equal(Y.getState((doc() as Y.Doc).store, 3), 0, 'nothing of it applied')
    assert.equal(documentStructs(doc() as Y.Doc), 4_518)
  })

  it('refuses a big update of more structs than the document may gain with 4004, and takes one that fits', async () => {
    const t = await startTestServer({ limits: { maxDocumentStructs: 100_000 } })
    const room = uniqueRoom()
    const doc = () => t.server.manager.loadedRoom(room)?.doc
    const attacker = await openRaw(`${t.wsUrl}/${room}`)
    const close = closed(attacker)
    const tooMany = minimalUpdate('gc-item', { structs: 150_001, client: 1 })
    assert.ok(tooMany.length > 256 * 1024, 'applied in slices')
    attacker.send(encodeUpdate(tooMany))
    const { code, reason } = await close
    assert.equal(code, CloseCode.DocumentTooLarge)
    assert.match(reason, /structs the document may still gain/)
    // A real one: 30,000 map entries, 600 KB.
    const real = updateFrame((d) => {
      const map = d.getMap('m')
      for (let i = 0; i < 30_000; i++) map.set(`key-${i}`, `value ${i}`)
    })
    assert.ok(real.length > 256 * 1024, 'applied in slices')
    const writer = await openRaw(`${t.wsUrl}/${room}`)
    writer.send(real)
    await eventually(() => doc()?.getMap('m').size === 30_000, 'the real one is taken whole')
    assert.equal(Y.getState((doc() as Y.Doc).store, 1), 0, 'nothing of the refused one applied')
    await assertOtherRoomsUnaffected(t)
  })
})
