import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { fakeTime, storedText } from './support/fake-time.js'
import { OPTIONS, TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

const { intervalMs, retryBaseMs, retryMaxMs } = OPTIONS.snapshot

let world: TestWorld

/** A client joined to a room on a server whose saves go through a `ControlledSnapshotStore`. */
async function oneClient() {
  world = new TestWorld()
  const store = new ControlledSnapshotStore(world.snapshots)
  const room = uniqueRoom()
  const server = world.server({ snapshots: store })
  const client = server.connect(room)
  await client.ready
  await settle()
  return { room, store, server, client }
}

/** An app's `onStore` that fails the first time; it keeps the text of each state handed over. */
function failingOnceOnStore() {
  const handedOver: string[] = []
  let fail = true
  const onStore = ({ document }: { document: () => Y.Doc }) => {
    if (fail) {
      fail = false
      throw new Error('search index down')
    }
    handedOver.push(document().getText('t').toString())
  }
  return { handedOver, onStore }
}

describe('snapshots', () => {
  afterEach(() => world.close())

  it('saves changes once, within the interval but not before 80% of it', async (t) => {
    const tick = fakeTime(t)
    const { room, store, client } = await oneClient()
    client.doc.getText('t').insert(0, 'a')
    client.doc.getText('t').insert(1, 'b')
    await tick(intervalMs * 0.8 - 1)
    assert.equal(store.saveAttempts, 0, 'jittered, but never sooner than 80% of the interval')
    await tick(intervalMs * 0.2 + 1)
    assert.equal(store.savesCompleted, 1, 'both changes in one snapshot')
    assert.equal(await storedText(world.snapshots, room), 'ab')
    await tick(10 * intervalMs)
    assert.equal(store.saveAttempts, 1, 'nothing changed since')
  })

  it('writes no snapshot of a room whose document did not change', async (t) => {
    const tick = fakeTime(t)
    const { store, client } = await oneClient()
    client.setPresence({ cursor: 1 })
    client.sendUpdate(Y.encodeStateAsUpdate(client.doc)) // nothing the room lacks
    await tick(10 * intervalMs)
    assert.equal(store.saveAttempts, 0)
  })

  it('writes again after a write during which the room changed', async (t) => {
    const tick = fakeTime(t)
    const { room, store, client } = await oneClient()
    const gate = deferred()
    store.saveGate = gate.promise
    client.doc.getText('t').insert(0, 'a')
    await tick(intervalMs)
    assert.equal(store.saveAttempts, 1, 'the first write has begun (its state encoded)')
    client.doc.getText('t').insert(1, 'b')
    store.saveGate = null
    gate.resolve()
    await settle()
    assert.equal(await storedText(world.snapshots, room), 'a', 'the first write holds what it encoded')
    await tick(intervalMs)
    assert.equal(store.savesCompleted, 2)
    assert.equal(await storedText(world.snapshots, room), 'ab')
  })

  it('never runs two writes of one room at once, and saves what changed meanwhile after', async (t) => {
    const tick = fakeTime(t)
    const { room, store, server, client } = await oneClient()
    const gate = deferred()
    store.saveGate = gate.promise
    client.doc.getText('t').insert(0, 'a')
    await tick(intervalMs)
    client.doc.getText('t').insert(1, 'b')
    const flushed = server.manager.save(room) // asked for while the timer's write is held
    await tick(3 * intervalMs)
    assert.equal(store.saveAttempts, 1, 'the second write waits for the first')
    store.saveGate = null
    gate.resolve()
    await flushed
    assert.equal(store.maxInFlight, 1)
    assert.equal(await storedText(world.snapshots, room), 'ab')
  })

  it('retries a failing save with backoff (base, doubling, capped) until it succeeds', async (t) => {
    const tick = fakeTime(t)
    const { room, store, server, client } = await oneClient()
    store.failSaves = 5
    client.doc.getText('t').insert(0, 'kept')
    await tick(intervalMs)
    assert.equal(store.saveAttempts, 1)
    const backoff = [retryBaseMs, 2 * retryBaseMs, 4 * retryBaseMs, retryMaxMs, retryMaxMs]
    for (const [failed, wait] of backoff.entries()) {
      await tick(wait - 1)
      assert.equal(
        store.saveAttempts,
        failed + 1,
        `no retry sooner than ${wait} ms after failure ${failed + 1}`,
      )
      await tick(1)
      assert.equal(store.saveAttempts, failed + 2, `a retry ${wait} ms after failure ${failed + 1}`)
    }
    assert.equal(store.savesCompleted, 1)
    assert.equal(await storedText(world.snapshots, room), 'kept', 'never dropped')
    assert.equal(server.errors().length, 5, 'each failure is logged')
    const failures = await server.metrics.registry.getSingleMetricAsString('symphony_snapshot_failures_total')
    assert.match(failures, /^symphony_snapshot_failures_total 5$/m, 'and counted for the alarm')
  })

  it('merges what another server saved meanwhile, and saves over it instead of losing it', async (t) => {
    const tick = fakeTime(t)
    const { room, client } = await oneClient()
    client.doc.getText('t').insert(0, 'ours ')
    const theirs = new Y.Doc()
    theirs.getText('t').insert(0, 'theirs')
    await world.snapshots.save(room, Y.encodeStateAsUpdate(theirs), null) // our save now conflicts
    await tick(intervalMs)
    const stored = await storedText(world.snapshots, room)
    assert.ok(stored?.includes('ours') && stored.includes('theirs'), `both edits are stored: ${stored}`)
    assert.ok(client.text().includes('theirs'), 'and the merged edit reached the client')
  })
  it('merges a late save of an earlier owner made after its own, keeps both, and saves on over its own version', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server()
    const client = server.connect(room)
    await client.ready
    const conflicts = () =>
      server.metrics.registry.getSingleMetricAsString('symphony_snapshot_conflicts_total')
    client.doc.getText('t').insert(0, 'ours')
    await tick(intervalMs)
    const saved = await world.snapshots.load(room)
    assert.ok(saved && !saved.deleted)
    // An earlier owner, fenced since, saves late over our snapshot: the writer's version is stale.
    const late = new Y.Doc()
    Y.applyUpdate(late, saved.state)
    late.getText('t').insert(4, ' and theirs')
    await world.snapshots.save(room, Y.encodeStateAsUpdate(late), saved.version)
    client.doc.getText('t').insert(0, 'all ')
    await tick(intervalMs)
    assert.equal(await storedText(world.snapshots, room), 'all ours and theirs', 'both contents are stored')
    assert.equal(client.text(), 'all ours and theirs', 'and the merged edit reached the client')
    assert.match(await conflicts(), /^symphony_snapshot_conflicts_total 1$/m)
    const { versions } = await world.snapshots.listVersions(room, { limit: 10 })
    assert.equal(versions.length, 3, 'ours, the late one, and the merge written over it')
    client.doc.getText('t').insert(0, '!')
    await tick(intervalMs)
    assert.equal(await storedText(world.snapshots, room), '!all ours and theirs')
    assert.match(await conflicts(), /^symphony_snapshot_conflicts_total 1$/m, 'no conflict with its own save')
  })

  it('saves a deletion the stored state lacks, though the room holds no struct it lacks', async (t) => {
    const tick = fakeTime(t)
    const { room, store, client } = await oneClient()
    client.doc.getText('t').insert(0, 'ab')
    await tick(intervalMs)
    const saved = await world.snapshots.load(room)
    assert.ok(saved && !saved.deleted)
    client.doc.getText('t').delete(1, 1)
    // Another server saves what it holds, the state before the deletion: ours now conflicts.
    await world.snapshots.save(room, saved.state, saved.version)
    await tick(intervalMs)
    assert.equal(store.savesCompleted, 2)
    assert.equal(await storedText(world.snapshots, room), 'a')
  })
  it('hands over a snapshot another server saved when its own hand-over of that content failed', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const { handedOver, onStore } = failingOnceOnStore()
    const room = uniqueRoom()
    const client = world.server({ hooks: { onStore } }).connect(room)
    await client.ready
    client.doc.getText('t').insert(0, 'indexed')
    await tick(intervalMs)
    assert.deepEqual(handedOver, [], 'saved, and the hand-over failed')
    const saved = await world.snapshots.load(room)
    assert.ok(saved && !saved.deleted)
    await world.snapshots.save(room, saved.state, saved.version) // another server saved the same
    await tick(intervalMs)
    assert.deepEqual(handedOver, ['indexed'])
  })
  it('still owes a failed hand-over after a save that failed, and makes it once a retry saves', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const { handedOver, onStore } = failingOnceOnStore()
    const client = world.server({ snapshots: store, hooks: { onStore } }).connect(uniqueRoom())
    await client.ready
    client.doc.getText('t').insert(0, 'indexed')
    await tick(intervalMs)
    assert.deepEqual(handedOver, [], 'saved, and the hand-over failed')
    store.failSaves = 1
    await tick(intervalMs)
    assert.equal(store.failSaves, 0, 'the save made to hand it over again failed')
    await tick(retryMaxMs)
    assert.deepEqual(handedOver, ['indexed'])
  })
})
