import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { MAX_AWARENESS_CLIENTS_PER_CONNECTION } from '../../src/core/connection.js'
import { awarenessFrame } from './support/test-client.js'
import { TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

describe('presence', () => {
  afterEach(() => world.close())

  it("removes a leaving connection's presence for the other clients", async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server()
    const [a, b, c] = [server.connect(room), server.connect(room), server.connect(room)]
    await Promise.all([a.ready, b.ready, c.ready])
    a.setPresence({ name: 'ann' })
    await settle()
    assert.deepEqual(b.presentClients(), [a.doc.clientID])
    assert.deepEqual(c.presentClients(), [a.doc.clientID])

    a.disconnect()
    await settle()
    assert.deepEqual(b.presentClients(), [], 'no ghost cursor')
    assert.deepEqual(c.presentClients(), [], 'for anyone')
  })

  it('gives a client that joins later the presence of the clients already there, sending them nothing new', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server()
    const [a, b] = [server.connect(room), server.connect(room)]
    await Promise.all([a.ready, b.ready])
    a.setPresence({ name: 'ann' })
    b.setPresence({ name: 'bob' })
    await settle()
    const awarenessFrames = (client: typeof a) =>
      client.messages().filter((m) => m.kind === 'awareness').length
    const [toA, toB] = [awarenessFrames(a), awarenessFrames(b)]
    const c = server.connect(room)
    await c.ready
    await settle()
    // Without renewals (every 15 s) or a move of theirs: what the room gave c when it joined.
    assert.deepEqual(c.presentClients().sort(), [a.doc.clientID, b.doc.clientID].sort())
    assert.deepEqual([awarenessFrames(a), awarenessFrames(b)], [toA, toB], 'nothing new for them')
  })

  it('closes a connection that speaks for more awareness clients than the cap allows', async (t) => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server()
    const [a, b] = [server.connect(room), server.connect(room)]
    await Promise.all([a.ready, b.ready])
    const invented = Array.from({ length: MAX_AWARENESS_CLIENTS_PER_CONNECTION + 1 }, () => {
      const awareness = new Awareness(new Y.Doc())
      awareness.setLocalState({ fake: true })
      t.after(() => awareness.destroy())
      return awareness
    })
    for (const awareness of invented.slice(0, -1)) a.send(awarenessFrame(awareness, [awareness.clientID]))
    await settle()
    assert.equal(a.closeCode, null, 'up to the cap is fine')
    const last = invented.at(-1) as Awareness
    a.send(awarenessFrame(last, [last.clientID]))
    await settle()
    assert.equal(a.closeCode, CloseCode.ProtocolError)
    assert.equal(b.presentClients().includes(last.clientID), false, 'the id past the cap went nowhere')
  })

  it("refuses a read-only connection's updates, saying so once, and still shares its presence", async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server()
    const [reader, writer] = [server.connect(room, { access: 'ro' }), server.connect(room)]
    await Promise.all([reader.ready, writer.ready])
    reader.doc.getText('t').insert(0, 'not allowed')
    reader.doc.getText('t').insert(0, 'still not')
    reader.setPresence({ name: 'reader' })
    await settle()
    const denials = reader.messages().filter((message) => message.kind === 'auth')
    assert.equal(denials.length, 1, 'one permission-denied for two refused updates')
    assert.equal(reader.closeCode, null)
    assert.equal(server.manager.loadedRoom(room)?.doc.getText('t').toString(), '')
    assert.deepEqual(writer.updatesReceived(), [])
    assert.deepEqual(writer.presentClients(), [reader.doc.clientID], 'presence works read-only')
  })
})
