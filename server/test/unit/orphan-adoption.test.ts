import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { eventually } from '../helpers/clients.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { LossyPubSub } from '../helpers/lossy-pubsub.js'
import { storedText } from './support/fake-time.js'
import { answered, syncStatus } from './support/sync-status.js'
import { TestWorld } from './support/test-world.js'
import { settle, until } from './support/turns.js'

let world: TestWorld

/** What the journal still holds of `writer`'s entries for the room. */
function journaledBy(writer: string, room: string): number {
  return world.journal.rooms.get(room)?.get(writer)?.length ?? 0
}

/**
 * Server 1 acknowledges an edit its journal confirmed, and it never reaches server 2 (its pub/sub
 * drops it, as a publish still in server 1's window when it dies): the edit is in server 1's
 * journal entries alone.
 */
async function editOnlyTheDeadServerHolds(room: string, survivorPubSub: LossyPubSub) {
  const dying = world.server()
  const author = dying.connect(room)
  await author.ready
  survivorPubSub.dropping = true
  author.doc.getText('t').insert(0, 'acknowledged')
  author.send(syncStatus(1))
  await until(() => answered(author).length > 0, 'the edit acknowledged')
  survivorPubSub.dropping = false // what is published from now on arrives again
  return dying
}

describe('journal entries of a server that is gone', () => {
  afterEach(() => world.close())

  it('are adopted by a server holding the room: applied, forwarded, saved at once, then trimmed', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const pubsub = new LossyPubSub('survivor', world.bus)
    const survivor = world.server({ pubsub })
    const reader = survivor.connect(room)
    await reader.ready
    const dying = await editOnlyTheDeadServerHolds(room, pubsub)
    await settle()
    assert.equal(reader.doc.getText('t').toString(), '', 'the survivor never got it')
    assert.equal(journaledBy(dying.id, room), 1)

    await dying.crash()
    await until(() => reader.doc.getText('t').toString() === 'acknowledged', 'its client sees the edit')
    await until(() => journaledBy(dying.id, room) === 0, 'trimmed once saved')
    assert.equal(await storedText(world.snapshots, room), 'acknowledged', 'saved before the trim')
    assert.equal(survivor.errors().length, 0)
  })

  it('are trimmed without a save when the last saved snapshot holds them already', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const store = new ControlledSnapshotStore(world.snapshots)
    const survivor = world.server({ snapshots: store })
    const reader = survivor.connect(room)
    await reader.ready
    const dying = world.server()
    const author = dying.connect(room)
    await author.ready
    author.doc.getText('t').insert(0, 'published')
    await until(() => reader.doc.getText('t').toString() === 'published', 'published to the survivor')
    await survivor.manager.save(room)
    const saves = store.savesCompleted

    await dying.crash()
    await until(() => journaledBy(dying.id, room) === 0, 'its entries trimmed')
    assert.equal(store.savesCompleted, saves, 'nothing new to save')
    assert.equal(await storedText(world.snapshots, room), 'published')
  })

  it('are adopted by a room still loading once it is live', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const pubsub = new LossyPubSub('survivor', world.bus)
    const dying = world.server()
    const author = dying.connect(room)
    await author.ready
    author.doc.getText('t').insert(0, 'saved')
    await settle()
    await dying.manager.save(room)
    // The survivor's load reads the journal, then waits for the room's snapshot.
    const store = new ControlledSnapshotStore(world.snapshots)
    store.gateHeads = false
    const gate = deferred()
    store.loadGate = gate.promise
    const survivor = world.server({ snapshots: store, pubsub })
    const reader = survivor.connect(room)
    await settle()
    assert.equal(survivor.manager.roomState(room), 'loading')
    pubsub.dropping = true
    author.doc.getText('t').insert(5, ' and acknowledged')
    author.send(syncStatus(1))
    await until(() => answered(author).length > 0, 'the edit acknowledged')
    pubsub.dropping = false
    await dying.crash()
    gate.resolve()
    await reader.ready
    await until(() => reader.doc.getText('t').toString() === 'saved and acknowledged', 'adopted once live')
    await until(() => journaledBy(dying.id, room) === 0, 'and trimmed once saved')
  })

  it('stay in the journal while the save that holds them fails, and go once it succeeds', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const pubsub = new LossyPubSub('survivor', world.bus)
    const store = new ControlledSnapshotStore(world.snapshots)
    const survivor = world.server({ pubsub, snapshots: store })
    const reader = survivor.connect(room)
    await reader.ready
    const dying = await editOnlyTheDeadServerHolds(room, pubsub)
    store.failSaves = 2
    await dying.crash()
    await until(() => reader.doc.getText('t').toString() === 'acknowledged', 'adopted')
    await until(() => store.saveAttempts >= 1, 'a save tried at once')
    assert.equal(journaledBy(dying.id, room), 1, 'kept while no save holds it')
    await eventually(() => store.savesCompleted > 0, 'saved once the store answers')
    await until(() => journaledBy(dying.id, room) === 0, 'then trimmed')
    assert.equal(await storedText(world.snapshots, room), 'acknowledged')
  })
})
