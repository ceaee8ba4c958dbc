import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { RoomMailbox } from '../../src/core/room-mailbox.js'
import type { JournalPosition } from '../../src/ports/update-journal.js'
import { AUTHORS_ROOT } from '../../src/protocol/update-scan.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { TestWorld } from './support/test-world.js'
import { settle, until } from './support/turns.js'

let world: TestWorld | undefined

/** A journal that is down: every append fails. */
class DownJournal extends MemoryUpdateJournal {
  override async append(): Promise<JournalPosition> {
    throw new Error('injected: the journal is down')
  }
}

describe('a room’s mailbox', () => {
  afterEach(() => world?.close())

  it('runs one step at a time, in the order posted, whether each resolves or rejects', async () => {
    const mailbox = new RoomMailbox()
    const order: string[] = []
    const first = deferred()
    const a = mailbox.post(async () => {
      order.push('a starts')
      await first.promise
      order.push('a ends')
    })
    const b = mailbox.post(() => {
      order.push('b')
      throw new Error('b fails')
    })
    const c = mailbox.post(() => order.push('c'))
    assert.equal(mailbox.posted, 3)
    first.resolve()
    await a
    await assert.rejects(b, /b fails/)
    await c
    assert.deepEqual(order, ['a starts', 'a ends', 'b', 'c'])
    assert.equal(mailbox.posted, 0)
  })

  it('deletes a room whose first write under a client id waits for a save that cannot come (journal and store down)', async () => {
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({
      snapshots: store,
      journal: new DownJournal(world.journal),
      options: { bindAuthors: true },
    })
    const room = uniqueRoom()
    const writer = server.connect(room, { userId: 'ada' })
    await writer.ready
    store.failSaves = Number.MAX_SAFE_INTEGER
    writer.doc.getText('t').insert(0, 'first words')
    const loaded = () => server.manager.loadedRoom(room)
    // Bound and applied, not journaled: the step waits for a snapshot to hold the binding.
    await until(() => (loaded()?.doc.getMap(AUTHORS_ROOT).size ?? 0) > 0, 'the binding applied')
    assert.equal(server.manager.roomSteps(room), 1, 'the write waits in the mailbox')
    await server.manager.delete(room) // its end is posted behind the waiting write
    assert.equal(server.manager.roomState(room), 'gone')
  })

  it('unloads only after the writes posted behind its unload: an edit decided after its author came and left is saved', async () => {
    world = new TestWorld()
    const first = deferred()
    let asked = 0
    const server = world.server({
      options: { roomGraceMs: 0 },
      hooks: {
        beforeApply: async () => {
          if (++asked === 1) await first.promise // the first decision takes long
        },
      },
    })
    const room = uniqueRoom()
    const ann = server.connect(room)
    await ann.ready
    ann.doc.getText('t').insert(0, 'ann')
    await until(() => asked === 1, 'ann’s edit is being decided')
    ann.disconnect()
    // Posted by the grace timer (0 ms, so at least 1 ms): 200 quick turns can pass before it fires.
    await until(() => server.manager.roomSteps(room) === 2, 'the unload is posted behind it', 1_000)
    const cy = server.connect(room)
    await cy.ready
    cy.doc.getMap('m').set('cy', 'was here')
    await until(() => server.manager.roomSteps(room) === 3, 'cy’s edit is posted behind the unload')
    cy.disconnect()
    await settle()
    first.resolve()
    await until(() => server.manager.roomState(room) === 'gone', 'unloaded', 1_000)
    const stored = new Y.Doc()
    Y.applyUpdate(stored, (await world.snapshots.load(room))?.state ?? new Uint8Array([0, 0]))
    assert.equal(stored.getText('t').toString(), 'ann')
    assert.equal(stored.getMap('m').get('cy'), 'was here', 'cy’s edit is saved, not dropped')
  })
})
