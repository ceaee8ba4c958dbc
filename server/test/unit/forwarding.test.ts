import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

/** Two clients on one server and a third on another, all joined to one room. */
async function threeClients() {
  world = new TestWorld()
  const room = uniqueRoom()
  const [here, there] = [world.server(), world.server()]
  const clients = { a: here.connect(room), b: here.connect(room), c: there.connect(room) }
  await Promise.all(Object.values(clients).map((client) => client.ready))
  await settle()
  return { room, here, ...clients }
}

describe('forwarding updates', () => {
  afterEach(() => world.close())

  it('sends an update to every other client here and on other servers exactly once, never back', async () => {
    const { a, b, c } = await threeClients()
    let sent: Uint8Array | null = null
    a.doc.on('update', (update: Uint8Array) => {
      sent = update
    })
    a.doc.getText('t').insert(0, 'hello')
    await settle()
    assert.ok(sent)
    assert.deepEqual(b.updatesReceived(), [sent], 'the same server: once, the very update')
    assert.deepEqual(c.updatesReceived(), [sent], 'another server, over pub/sub: once')
    assert.deepEqual(a.updatesReceived(), [], 'never echoed to its sender')
    assert.equal(c.text(), 'hello')
  })

  it('forwards nothing, journals nothing and marks nothing dirty for an update that changes nothing', async () => {
    const { room, here, a, b, c } = await threeClients()
    a.doc.getText('t').insert(0, 'once')
    await settle()
    const version = here.manager.loadedRoom(room)?.version
    const journaled = (await here.journal.read(room)).updates.length

    a.sendUpdate(Y.encodeStateAsUpdate(a.doc)) // what the room holds already
    await settle()
    assert.equal(b.updatesReceived().length, 1, 'only the first edit reached b')
    assert.equal(c.updatesReceived().length, 1, 'only the first edit reached the other server')
    assert.equal(here.manager.loadedRoom(room)?.version, version)
    assert.equal((await here.journal.read(room)).updates.length, journaled)
  })
})
