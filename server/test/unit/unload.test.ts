import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { MemoryRoomRegistry } from '../../src/adapters/memory-room-registry.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { fakeTime, storedText } from './support/fake-time.js'
import { OPTIONS, TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

const { roomGraceMs } = OPTIONS
/** Long enough that the only save in these tests is the one made when the room unloads. */
const options = { snapshot: { ...OPTIONS.snapshot, intervalMs: 10 * roomGraceMs } }

let world: TestWorld

/** A server holding a room that one client edited and then left. */
async function leftRoom() {
  world = new TestWorld()
  const store = new ControlledSnapshotStore(world.snapshots)
  const server = world.server({ snapshots: store, options })
  const room = uniqueRoom()
  const client = server.connect(room)
  await client.ready
  client.doc.getText('t').insert(0, 'kept')
  const loaded = server.manager.loadedRoom(room)
  client.disconnect()
  await settle()
  return { room, store, server, loaded }
}

describe('unloading a room', () => {
  afterEach(() => world.close())

  it('after the grace period: saves, releases and frees the room', async (t) => {
    const tick = fakeTime(t)
    const { room, server } = await leftRoom()
    const peer = { serverId: 'probe', internalAddress: '' }
    const registry = new MemoryRoomRegistry(peer, { leaseMs: 60_000, now: Date.now }, world.registry)
    t.after(() => registry.close())
    await tick(roomGraceMs - 1)
    assert.ok(server.manager.loadedRoom(room), 'still loaded within the grace period')
    assert.equal(await storedText(world.snapshots, room), null)
    assert.equal((await registry.ownerOf(room))?.serverId, server.id)

    await tick(1)
    assert.equal(await storedText(world.snapshots, room), 'kept', 'saved first')
    assert.equal(await registry.ownerOf(room), null, 'released')
    assert.equal(server.manager.loadedRoom(room), undefined)
    assert.equal(server.manager.roomCount, 0)
  })

  it('keeps the room when it is acquired again within the grace period', async (t) => {
    const tick = fakeTime(t)
    const { room, server, loaded } = await leftRoom()
    await tick(roomGraceMs - 1)
    const back = server.connect(room)
    await back.ready
    await tick(2 * roomGraceMs)
    assert.equal(server.manager.loadedRoom(room), loaded, 'the same room, never unloaded')
    assert.equal(await storedText(world.snapshots, room), null, 'nor saved for an unload')
    back.disconnect()
    await settle() // the socket's close reaches the server
    await tick(roomGraceMs)
    assert.equal(server.manager.loadedRoom(room), undefined, 'a grace period starts again')
  })

  it('keeps a room whose final save failed loaded, and unloads it once a retry saved it', async (t) => {
    const tick = fakeTime(t)
    const { room, store, server, loaded } = await leftRoom()
    store.failSaves = 1
    await tick(roomGraceMs)
    assert.equal(store.saveAttempts, 1)
    assert.equal(server.manager.loadedRoom(room), loaded, 'kept with its unsaved change')
    await tick(OPTIONS.snapshot.retryMaxMs)
    assert.equal(await storedText(world.snapshots, room), 'kept')
    assert.equal(server.manager.loadedRoom(room), undefined)
  })
})
