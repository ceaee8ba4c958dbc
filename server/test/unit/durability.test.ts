import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import type { JournalPosition } from '../../src/ports/update-journal.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { fakeTime, storedText } from './support/fake-time.js'
import { answered, syncStatus } from './support/sync-status.js'
import { OPTIONS, TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

const { intervalMs } = OPTIONS.snapshot

let world: TestWorld

/** A journal whose appends wait until the test confirms or fails them, one by one or all at once. */
class HeldJournal extends MemoryUpdateJournal {
  readonly #held: { room: string; update: Uint8Array; done: ReturnType<typeof deferred<JournalPosition>> }[] =
    []

  override append(room: string, update: Uint8Array): Promise<JournalPosition> {
    const done = deferred<JournalPosition>()
    this.#held.push({ room, update, done })
    return done.promise
  }

  get held(): number {
    return this.#held.length
  }

  /** The journal answers every held append (in order, as Redis does). */
  async confirmAll(): Promise<void> {
    for (const { room, update, done } of this.#held.splice(0)) done.resolve(await super.append(room, update))
  }

  /** The journal fails every held append (a command timeout, a lost link). */
  failAll(): void {
    for (const { done } of this.#held.splice(0)) done.reject(new Error('injected journal failure'))
  }
}

describe('durability: a sync-status answer means saved', () => {
  afterEach(() => world.close())

  it('waits for the journal to confirm the append, not just to be handed it', async () => {
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const client = world.server({ journal }).connect(uniqueRoom())
    await client.ready
    client.doc.getText('t').insert(0, 'edit')
    client.send(syncStatus(1))
    await settle()
    assert.equal(journal.held, 1)
    assert.deepEqual(answered(client), [], 'no answer while the append is unconfirmed')
    await journal.confirmAll()
    await settle()
    assert.deepEqual(answered(client), [1])
  })

  it('a failed append saves a snapshot at once, and only that save answers', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ journal, snapshots: store })
    const room = uniqueRoom()
    const client = server.connect(room)
    await client.ready
    const gate = deferred()
    store.saveGate = gate.promise
    client.doc.getText('t').insert(0, 'kept')
    client.send(syncStatus(7))
    await settle()
    journal.failAll()
    await settle()
    await tick(0)
    assert.equal(store.saveAttempts, 1, 'the save started without waiting for the snapshot interval')
    assert.deepEqual(answered(client), [], 'no answer before the snapshot is saved')
    gate.resolve()
    await settle()
    assert.deepEqual(answered(client), [7])
    assert.equal(await storedText(world.snapshots, room), 'kept')
    assert.ok(
      server.logs.some((entry) => entry.message.startsWith('journal write failed; saving a snapshot now')),
    )
  })

  it('a failing snapshot store keeps the answer back, retrying with backoff until a save succeeds', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const store = new ControlledSnapshotStore(world.snapshots)
    store.failSaves = 3
    const client = world.server({ journal, snapshots: store }).connect(uniqueRoom())
    await client.ready
    client.doc.getText('t').insert(0, 'x')
    client.send(syncStatus(2))
    await settle()
    journal.failAll()
    await settle()
    await tick(0)
    for (let wait = OPTIONS.snapshot.retryBaseMs; store.savesCompleted === 0; wait *= 2) {
      assert.ok(store.saveAttempts <= 4, 'the fourth save succeeds')
      assert.deepEqual(answered(client), [], `no answer after ${store.saveAttempts} failed saves`)
      await tick(wait)
    }
    assert.equal(store.saveAttempts, 4)
    assert.deepEqual(answered(client), [2])
  })

  it('a snapshot never waits for a hung journal, and once saved it answers for what it holds', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const store = new ControlledSnapshotStore(world.snapshots)
    const room = uniqueRoom()
    const client = world.server({ journal, snapshots: store }).connect(room)
    await client.ready
    client.doc.getText('t').insert(0, 'held')
    client.send(syncStatus(3))
    await tick(intervalMs)
    assert.equal(store.savesCompleted, 1, 'saved while the append hangs')
    assert.equal(await storedText(world.snapshots, room), 'held')
    assert.deepEqual(answered(client), [3], 'the saved snapshot makes the edit durable')
    // An edit after the save is not in it: its answer waits for the journal again.
    client.doc.getText('t').insert(4, '!')
    client.send(syncStatus(4))
    await settle()
    assert.deepEqual(answered(client), [3])
    await journal.confirmAll()
    await settle()
    assert.deepEqual(answered(client), [3, 4])
  })

  it('logs a burst of failed appends once per room, and counts every one', async () => {
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const server = world.server({ journal })
    const client = server.connect(uniqueRoom())
    await client.ready
    for (const char of 'abcde') client.doc.getText('t').insert(0, char)
    await settle()
    journal.failAll()
    await settle()
    const lines = server.logs.filter((entry) => entry.message.startsWith('journal write failed'))
    assert.equal(lines.length, 1)
    const failures = await server.metrics.journalFailures.get()
    assert.equal(failures.values.find((v) => v.labels.action === 'append')?.value, 5)
  })

  it('answers in order: a later confirmed append does not answer for an earlier failed one', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const journal = new HeldJournal(world.journal)
    const store = new ControlledSnapshotStore(world.snapshots)
    const gate = deferred()
    store.saveGate = gate.promise
    const client = world.server({ journal, snapshots: store }).connect(uniqueRoom())
    await client.ready
    client.doc.getText('t').insert(0, 'a')
    client.send(syncStatus(5))
    await settle()
    journal.failAll()
    client.doc.getText('t').insert(1, 'b')
    client.send(syncStatus(6))
    await settle()
    await journal.confirmAll()
    await tick(0)
    assert.deepEqual(answered(client), [], 'the first edit is neither journaled nor saved')
    gate.resolve()
    await settle()
    assert.deepEqual(answered(client), [5, 6])
  })
})

/** A journal whose store the test can "restart empty": it tells the server it may have lost entries. */
class ForgetfulJournal extends MemoryUpdateJournal {
  #listeners: (() => void)[] = []
  onPossibleLoss(listener: () => void): void {
    this.#listeners.push(listener)
  }
  restartEmpty(room: string): Promise<void> {
    return this.delete(room).then(() => {
      for (const listener of this.#listeners) listener()
    })
  }
}

describe('durability: a journal that may have lost entries', () => {
  afterEach(() => world.close())

  it('has every room that relies on it saved at once, not at the next interval', async (t) => {
    const tick = fakeTime(t)
    world = new TestWorld()
    const journal = new ForgetfulJournal(world.journal)
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ journal, snapshots: store })
    const [journaled, saved] = [uniqueRoom(), uniqueRoom()]
    const [a, b] = [server.connect(journaled), server.connect(saved)]
    await Promise.all([a.ready, b.ready])
    b.doc.getText('t').insert(0, 'saved')
    await tick(intervalMs)
    assert.equal(store.savesCompleted, 1)
    a.doc.getText('t').insert(0, 'only journaled')
    await settle()
    await journal.restartEmpty(journaled)
    await tick(0)
    assert.equal(store.savesCompleted, 2, 'one save: the room whose edit only the journal held')
    assert.equal(await storedText(world.snapshots, journaled), 'only journaled')
  })
})
