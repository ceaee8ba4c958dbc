import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, MessageType } from '@symphony/client/wire'
import * as Y from 'yjs'
import { MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { putSnapshot } from '../../src/contracts/stored-snapshots.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { incarnationKey } from '../../src/core/incarnation.js'
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

describe('a deleted room stays deleted', () => {
  afterEach(() => world.close())

  it("a deletion retried after its server died between tombstone and notice removes the dead incarnation's journal too", async () => {
    world = new TestWorld()
    const server = world.server()
    const room = uniqueRoom()
    // What the dead server left: journaled edits of incarnation 0, and its tombstone.
    const dead = new MemoryUpdateJournal(world.journal)
    const doc = new Y.Doc()
    doc.getText('t').insert(0, 'deleted')
    await dead.append(incarnationKey(room, 0), Y.encodeStateAsUpdate(doc))
    await world.snapshots.delete(room, 0)
    await server.manager.delete(room)
    assert.deepEqual((await dead.read(incarnationKey(room, 0))).updates, [], 'nothing of it is left')
  })

  it('a journal stream of the deleted incarnation never reaches the next', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const server = world.server()
    const room = uniqueRoom()
    const old = server.connect(room)
    await old.ready
    old.doc.getText('t').insert(0, 'old')
    await settle()
    await server.manager.delete(room)
    const fresh = server.connect(room)
    await fresh.ready
    const late = new Y.Doc()
    late.getText('t').insert(0, 'late')
    await server.journal.append(room, Y.encodeStateAsUpdate(late)) // a straggler's journal stream
    await settle()
    assert.equal(fresh.text(), '', 'the live incarnation does not read the old one’s stream')
    fresh.disconnect()
    await settle()
    await tick(OPTIONS.roomGraceMs)
    assert.equal(server.manager.roomState(room), 'gone', 'unloaded')
    const reloaded = server.connect(room)
    await reloaded.ready
    await settle()
    assert.equal(reloaded.text(), '', 'the old incarnation’s journal is not replayed')
  })
})

describe('a client naming its copy’s incarnation', () => {
  afterEach(() => world.close())

  it('is told the room’s; refused with RoomDeleted for a deleted one; told to retry for one the server is behind', async () => {
    world = new TestWorld()
    const server = world.server()
    const room = uniqueRoom()
    const first = server.connect(room, { incarnation: 'none' })
    await first.ready
    assert.equal(first.received[0]?.[0], MessageType.Incarnation, 'told before sync step 1')
    first.disconnect()
    await server.manager.delete(room)
    const stale = server.connect(room, { incarnation: 0 })
    await stale.ready
    assert.equal(stale.closeCode, CloseCode.RoomDeleted)
    const ahead = server.connect(room, { incarnation: 7 })
    await ahead.ready
    assert.equal(ahead.closeCode, CloseCode.TryAgainLater)
    const current = server.connect(room, { incarnation: 1 })
    await current.ready
    assert.equal(current.closeCode, null)
  })
})

describe('a deletion the snapshot store refuses', () => {
  afterEach(() => world.close())

  it('fails, and loses nothing acknowledged: the journal stays and the room loads again whole', async () => {
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store })
    const room = uniqueRoom()
    const writer = server.connect(room)
    await writer.ready
    writer.doc.getText('t').insert(0, 'journaled, not saved')
    await settle()
    store.failDeletes = true
    await assert.rejects(server.manager.delete(room), /injected delete failure/)
    assert.equal(writer.closeCode, CloseCode.RoomDeleted, 'its clients were closed at once')
    await until(() => server.manager.roomState(room) !== 'deleting', 'the instance is gone')
    store.failDeletes = false
    const back = server.connect(room)
    await back.ready
    await settle()
    assert.equal(back.text(), 'journaled, not saved')
  })
})
