import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

/** Three clients joined to one room, on its one server. */
async function threeClients() {
  world = new TestWorld()
  const room = uniqueRoom()
  const here = world.server()
  const clients = { a: here.connect(room), b: here.connect(room), c: here.connect(room) }
  await Promise.all(Object.values(clients).map((client) => client.ready))
  await settle()
  return { room, here, ...clients }
}

describe('forwarding updates', () => {
  afterEach(() => world.close())

  it('sends an update to every other client exactly once, never back', async () => {
    const { a, b, c } = await threeClients()
    let sent: Uint8Array | null = null
    a.doc.on('update', (update: Uint8Array) => {
      sent = update
    })
    a.doc.getText('t').insert(0, 'hello')
    await settle()
    assert.ok(sent)
    assert.deepEqual(b.updatesReceived(), [sent], 'once, the very update')
    assert.deepEqual(c.updatesReceived(), [sent], 'once, the very update')
    assert.deepEqual(a.updatesReceived(), [], 'never echoed to its sender')
    assert.equal(b.text(), 'hello')
    assert.equal(c.text(), 'hello')
  })

  it('forwards nothing, journals nothing and marks nothing dirty for an update that changes nothing', async () => {
    const { room, here, a, b, c } = await threeClients()
    a.doc.getText('t').insert(0, 'once')
    await settle()
    const loaded = here.manager.loadedRoom(room)
    assert.ok(loaded, 'the room is loaded')
    const version = loaded.version
    assert.ok(version > 0, 'the first edit changed it')
    const journaled = (await here.journal.read(room)).updates.length
    assert.equal(journaled, 1, 'the first edit was journaled')

    a.sendUpdate(Y.encodeStateAsUpdate(a.doc)) // what the room holds already
    b.sendUpdate(Y.encodeStateAsUpdate(b.doc)) // and from a client that got it forwarded
    await settle()
    assert.equal(a.updatesReceived().length, 0, 'nothing came back to a')
    assert.equal(b.updatesReceived().length, 1, 'only the first edit reached b')
    assert.equal(c.updatesReceived().length, 1, 'only the first edit reached c')
    assert.equal(loaded.version, version)
    assert.equal((await here.journal.read(room)).updates.length, journaled)
  })
})
