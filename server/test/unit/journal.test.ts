import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import type { JournalPosition } from '../../src/ports/update-journal.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { fakeTime, storedText } from './support/fake-time.js'
import { OPTIONS, TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

const { intervalMs } = OPTIONS.snapshot

let world: TestWorld

/** A journal that tells the test of each append as it starts. */
class WatchedJournal extends MemoryUpdateJournal {
  onAppend = () => {}
  override append(room: string, update: Uint8Array): Promise<JournalPosition> {
    this.onAppend()
    return super.append(room, update)
  }
}

describe('the update journal', () => {
  afterEach(() => world.close())

  it('journals an update before any other client can see it', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const journal = new WatchedJournal(world.journal)
    const here = world.server({ journal })
    const [a, b, c] = [here.connect(room), here.connect(room), here.connect(room)]
    await Promise.all([a.ready, b.ready, c.ready])
    await settle()
    const seenAtAppend: number[] = []
    journal.onAppend = () => seenAtAppend.push(b.updatesReceived().length, c.updatesReceived().length)
    a.doc.getText('t').insert(0, 'x')
    await settle()
    assert.deepEqual(seenAtAppend, [0, 0])
    assert.equal(b.updatesReceived().length, 1)
    assert.equal(c.updatesReceived().length, 1)
  })

  it('trims exactly what a saved snapshot holds, keeping what was appended during the save', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store })
    const room = uniqueRoom()
    const client = server.connect(room)
    await client.ready
    const gate = deferred()
    store.saveGate = gate.promise
    client.doc.getText('t').insert(0, 'one ')
    await tick(intervalMs)
    assert.equal(store.saveAttempts, 1, 'the save has its state and waits')
    client.doc.getText('t').insert(4, 'two')
    store.saveGate = null
    gate.resolve()
    await settle()
    const { updates } = await server.journal.read(room)
    assert.equal(updates.length, 1, "the first edit's entry went, the second's stayed")
    const replayed = new Y.Doc()
    Y.applyUpdate(replayed, (await world.snapshots.load(room))?.state ?? new Uint8Array())
    assert.equal(replayed.getText('t').toString(), 'one ')
    for (const update of updates) Y.applyUpdate(replayed, update)
    assert.equal(replayed.getText('t').toString(), 'one two', 'snapshot plus journal: nothing lost')
    await tick(intervalMs)
    assert.deepEqual((await server.journal.read(room)).updates, [], 'the next snapshot holds the rest')
  })

  it('replays the journal of a server that crashed before saving any snapshot', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const room = uniqueRoom()
    const crashed = world.server()
    const before = crashed.connect(room)
    await before.ready
    before.doc.getText('t').insert(0, 'survives')
    await settle()
    await crashed.crash()
    assert.equal(await storedText(world.snapshots, room), null, 'no snapshot was saved')

    const next = world.server()
    const after = next.connect(room)
    await after.ready
    await settle()
    assert.equal(after.text(), 'survives')
    await tick(intervalMs)
    assert.equal(await storedText(world.snapshots, room), 'survives', 'what was replayed is saved')
    assert.deepEqual((await next.journal.read(room)).updates, [], 'and its entries trimmed')
  })
})

describe('replaying a damaged journal', () => {
  afterEach(() => world.close())

  it('skips a record that does not apply, counts and logs it, and applies every record after it', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const crashed = world.server()
    const writer = crashed.connect(room)
    await writer.ready
    writer.doc.getText('t').insert(0, 'before ')
    await settle()
    await crashed.journal.append(room, new Uint8Array([0xff, 0xff, 0xff])) // not an update
    writer.doc.getText('t').insert(7, 'after')
    await settle()
    await crashed.crash()

    const next = world.server()
    const reader = next.connect(room)
    await reader.ready
    await settle()
    assert.equal(reader.text(), 'before after')
    const skipped = await next.metrics.journalSkipped.get()
    assert.equal(skipped.values[0]?.value, 1)
    assert.ok(next.logs.some((entry) => entry.message === 'skipped a journal record that does not apply'))
  })
})
