import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { putSnapshot } from '../../src/contracts/stored-snapshots.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { fakeTime, storedText } from './support/fake-time.js'
import { OPTIONS, TestWorld } from './support/test-world.js'
import { settle, until } from './support/turns.js'

let world: TestWorld

describe('deleting a room while others join it', () => {
  afterEach(() => world.close())

  it('a client joining while the deletion waits for a save in flight gets the fresh, empty room, never the old one', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store })
    const room = uniqueRoom()
    const old = server.connect(room)
    await old.ready
    old.doc.getText('t').insert(0, 'before the delete')
    const gate = deferred()
    store.saveGate = gate.promise
    await tick(OPTIONS.snapshot.intervalMs)
    assert.equal(store.saveAttempts, 1, 'a save is in flight')

    const deleted = server.manager.delete(room)
    assert.equal(old.closeCode, CloseCode.RoomDeleted, 'closed before the deletion waits')
    const joiner = server.connect(room)
    await settle()
    assert.equal(joiner.text(), '', 'not admitted to the room being deleted')
    store.saveGate = null
    gate.resolve()
    await deleted
    await joiner.ready
    await until(() => server.manager.roomState(room) === 'live', 'the fresh room is live')
    assert.equal(joiner.closeCode, null)
    assert.equal(joiner.text(), '')
    assert.equal(await storedText(world.snapshots, room), null, 'the in-flight save did not bring it back')

    // The joiner's hold is on the fresh room: another client there is not unloaded under it.
    const stays = server.connect(room)
    await stays.ready
    const fresh = server.manager.loadedRoom(room)
    joiner.disconnect()
    await settle()
    await tick(OPTIONS.roomGraceMs)
    assert.equal(server.manager.loadedRoom(room), fresh, 'still loaded: it has a holder')
    stays.doc.getText('t').insert(0, 'after')
    await settle()
    assert.equal(fresh?.doc.getText('t').toString(), 'after')
  })

  it('a client that arrived while the room loaded never sees the deleted content: it joins the fresh room', async () => {
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store })
    const room = uniqueRoom()
    const seed = new Y.Doc()
    seed.getText('t').insert(0, 'stored')
    await putSnapshot(world.snapshots, room, Y.encodeStateAsUpdate(seed))
    const gate = deferred()
    store.loadGate = gate.promise
    const early = server.connect(room)
    const deleted = server.manager.delete(room)
    gate.resolve()
    await deleted
    await early.ready
    await until(() => server.manager.roomState(room) === 'live', 'a fresh room')
    assert.equal(early.text(), '', 'it never saw the deleted room')
  })
})
