import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as syncProtocol from 'y-protocols/sync'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { storedText } from './support/fake-time.js'
import { syncFrame } from './support/test-client.js'
import { LIMITS, type TestServer, TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

type Client = ReturnType<TestServer['connect']>

/** Four clients joined to one room, on its one server. */
async function joined() {
  world = new TestWorld()
  const room = uniqueRoom()
  const server = world.server()
  const clients = [1, 2, 3, 4].map(() => server.connect(room))
  await Promise.all(clients.map((client) => client.ready))
  await settle()
  const [a, b, c, d] = clients as [Client, Client, Client, Client]
  return { room, server, a, b, c, d }
}

describe('what closes a connection, and with which code', () => {
  afterEach(() => world.close())

  it('closes with 1011 and logs an error when the server itself fails handling a frame', async (t) => {
    const { room, server, a } = await joined()
    t.mock.method(server.metrics, 'updateHandled', () => {
      throw new Error('a bug in our own metrics')
    })
    a.doc.getText('t').insert(0, 'x')
    await settle()
    assert.equal(a.closeCode, CloseCode.InternalError, 'not blamed on the client (1002)')
    const [logged] = server.errors()
    assert.equal(logged?.fields.room, room)
    assert.match(String(logged?.fields.connection), new RegExp(`^${server.id}:`))
    assert.match(String(logged?.fields.err), /a bug in our own metrics/)
  })

  it('closes with 1011, not 1002, when a document observer fails while a sound update is applied', async () => {
    const { room, server, a, b } = await joined()
    const doc = server.manager.loadedRoom(room)?.doc
    assert.ok(doc, 'the room is loaded')
    let failures = 1
    doc.on('afterTransaction', () => {
      if (failures-- > 0) throw new Error('a bug in an observer of ours')
    })
    a.doc.getText('t').insert(0, 'x')
    await settle()
    assert.equal(a.closeCode, CloseCode.InternalError, 'the sender is not blamed for our observer')
    assert.equal(b.closeCode, null)
    assert.match(String(server.errors()[0]?.fields.err), /a bug in an observer of ours/)
    // What Yjs applied before the observer failed counts as a change: joiners get it, it is saved.
    const late = server.connect(room)
    await late.ready
    await settle()
    assert.equal(late.text(), 'x')
    assert.equal(await server.manager.save(room).then(() => storedText(world.snapshots, room)), 'x')
  })

  it('closes a joiner with 1011 and logs it when the room fails to greet it, leaving the others be', async (t) => {
    const { room, server, a } = await joined()
    const loaded = server.manager.loadedRoom(room)
    assert.ok(loaded, 'the room is loaded')
    t.mock.method(loaded, 'join', () => {
      throw new Error('a bug while greeting a joiner')
    })
    const late = server.connect(room)
    await settle()
    assert.equal(late.closeCode, CloseCode.InternalError)
    assert.equal(a.closeCode, null)
    assert.match(String(server.errors()[0]?.fields.err), /a bug while greeting a joiner/)
  })

  it('ends only the connection whose socket throws (1011); everyone else still gets the update', async () => {
    const { server, a, b, c, d } = await joined()
    c.transport.failSends = true
    a.doc.getText('t').insert(0, 'x')
    await settle()
    assert.equal(c.closeCode, CloseCode.InternalError)
    assert.equal(a.closeCode, null)
    assert.equal(b.text(), 'x')
    assert.equal(d.text(), 'x')
    assert.equal(server.errors().length, 1)
  })

  it('closes with 1002, logging no server error, for an update or state vector Yjs cannot read', async () => {
    const { server, a, b } = await joined()
    a.sendUpdate(new Uint8Array([1, 200, 3, 4, 5, 6, 7, 8]))
    // A sync step 1 whose state vector ends in the middle of a number.
    b.send(
      syncFrame((encoder) => {
        encoding.writeVarUint(encoder, syncProtocol.messageYjsSyncStep1)
        encoding.writeVarUint8Array(encoder, new Uint8Array([0xff]))
      }),
    )
    await settle()
    assert.equal(a.closeCode, CloseCode.ProtocolError)
    assert.equal(b.closeCode, CloseCode.ProtocolError)
    assert.deepEqual(server.errors(), [])
  })

  it('closes a client sending faster than its rate limit with RateLimited', async () => {
    world = new TestWorld()
    const client = world.server().connect(uniqueRoom(), { limits: { messagesPerSecond: 1, messageBurst: 5 } })
    await client.ready
    for (let i = 0; i < 5; i++) client.sendUpdate(new Uint8Array([0, 0]))
    assert.equal(client.closeCode, CloseCode.RateLimited)
  })

  it('closes a client too slow to take what the room sends as a slow consumer', async () => {
    const { a, c } = await joined()
    c.transport.bufferedAmount = LIMITS.maxBufferedBytes + 1
    a.doc.getText('t').insert(0, 'x')
    await settle()
    assert.equal(c.closeCode, CloseCode.SlowConsumer)
    assert.equal(a.closeCode, null)
  })

  it('closes a client that sends more than it may before the room loads with TryAgainLater', async () => {
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const gate = deferred()
    store.loadGate = gate.promise
    const client = world
      .server({ snapshots: store })
      .connect(uniqueRoom(), { limits: { maxBufferedBytes: 100 } })
    client.doc.getText('t').insert(0, 'y'.repeat(60))
    assert.equal(client.closeCode, null)
    client.doc.getText('t').insert(0, 'z'.repeat(60))
    assert.equal(client.closeCode, CloseCode.TryAgainLater)
    gate.resolve()
    await client.ready
  })
})
