import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RoomJournal } from '../../src/core/room-journal.js'
import type { JournalContents, JournalPosition, UpdateJournal } from '../../src/ports/update-journal.js'
import { deferred } from '../helpers/deferred.js'
import { freed } from './support/collected.js'
import { until } from './support/turns.js'

const UPDATE = new Uint8Array([1, 2, 3])

/** Confirms each append at once with a position of its own, and keeps a weak reference to each. */
class PositionedJournal implements UpdateJournal {
  readonly positions: WeakRef<JournalPosition>[] = []
  readonly trims: JournalPosition[] = []
  appended = 0

  append(): Promise<JournalPosition> {
    const position = new Map([['here', String(++this.appended)]])
    this.positions.push(new WeakRef(position))
    return Promise.resolve(position)
  }

  async fence(): Promise<void> {}

  async read(): Promise<JournalContents> {
    return { updates: [], position: new Map() }
  }

  async trim(_room: string, position: JournalPosition): Promise<void> {
    this.trims.push(position)
  }
  async delete(): Promise<void> {}
  async close(): Promise<void> {}
}

function roomJournal(journal: UpdateJournal, replayed: JournalPosition = new Map()): RoomJournal {
  return new RoomJournal({
    journal,
    room: 'room',
    replayed: { position: replayed, updates: replayed.size },
    outcomes: { failed() {}, appended() {} },
    onAppendFailed() {},
  })
}

describe('a room journal', () => {
  it('keeps one confirmed position between saves while every update is applied whole, however many are recorded', async () => {
    const journal = new PositionedJournal()
    const room = roomJournal(journal)
    const recorded = 2_000
    for (let i = 0; i < recorded; i++) room.record(UPDATE)
    await until(() => room.isDurable, 'every append confirmed')
    // No save here, as while the snapshot store is down: a position kept per update was a heap
    // object per edit until a save went through (and, between saves, old-generation garbage).
    assert.ok(
      (await freed(journal.positions)) >= recorded - 1,
      'the positions a later one covers are dropped',
    )
    const mark = room.mark()
    assert.equal(mark.through, recorded)
    assert.deepEqual([...mark.position], [['here', String(recorded)]])
  })

  it('keeps at most two confirmed positions for updates applied only once their append is confirmed (author bindings)', async () => {
    const journal = new PositionedJournal()
    const room = roomJournal(journal)
    const bindings = 1_000
    for (let i = 0; i < bindings; i++) {
      // As `Room` writes a binding: journaled first, applied once the journal confirmed it.
      const binding = room.recordBeforeApplying(UPDATE)
      assert.equal(await binding.appended, true)
      binding.applied()
    }
    // Each is kept while its successor is applied, then dropped at the next confirmation.
    assert.ok((await freed(journal.positions)) >= bindings - 2, 'no more than the last two are kept')
    assert.deepEqual([...room.mark().position], [['here', String(bindings)]])
  })

  it('stops a mark before an update still being applied, at the last position confirmed before it', async () => {
    const journal = new PositionedJournal()
    const room = roomJournal(journal)
    room.record(UPDATE) // 1
    const sliced = room.recordBeforeApplying(UPDATE) // 2, applied across turns
    for (let i = 0; i < 100; i++) room.record(UPDATE) // 3 to 102
    await until(() => journal.appended === 102 && room.isDurable, 'every append confirmed')
    let mark = room.mark()
    assert.equal(mark.through, 1, 'a snapshot now does not hold update 2 whole')
    assert.deepEqual([...mark.position], [['here', '1']], 'so trimming after it keeps 2 and what follows')
    assert.equal(await freed(journal.positions), 100, 'positions 2 to 101 are covered by 102')
    sliced.applied()
    mark = room.mark()
    assert.equal(mark.through, 102)
    assert.deepEqual([...mark.position], [['here', '102']])
    room.saved(mark)
    room.record(UPDATE) // 103
    await until(() => room.isDurable, 'the last append confirmed')
    assert.deepEqual([...room.mark().position], [['here', '103']])
  })

  it('trims the entries of a gone writer it adopted with a save that holds them, and keeps those adopted after its mark', async () => {
    const journal = new PositionedJournal()
    const room = roomJournal(journal)
    room.adopted(new Map([['gone', '5']]))
    const first = room.mark()
    assert.deepEqual([...first.position], [['gone', '5']])
    room.adopted(new Map([['gone', '9']])) // more of its entries, applied after the mark
    room.saved(first)
    await until(() => journal.trims.length === 1, 'the first save trimmed')
    assert.deepEqual([...(journal.trims[0] ?? [])], [['gone', '5']])
    const second = room.mark()
    assert.deepEqual([...second.position], [['gone', '9']], 'what the first trim did not reach is still held')
    room.saved(second)
    await until(() => journal.trims.length === 2, 'the second save trimmed')
    assert.deepEqual([...room.mark().position], [], 'nothing held apart any more')
  })

  it("counts entries replayed from its own stream trimmed once its own later entry's trim reaches them", async () => {
    const journal = new PositionedJournal()
    const room = roomJournal(journal, new Map([['here', '0']])) // one writer, as the file journal
    room.record(UPDATE)
    await until(() => room.isDurable, 'confirmed')
    room.saved(room.mark())
    await until(() => journal.trims.length === 1, 'trimmed')
    assert.deepEqual([...(journal.trims[0] ?? [])], [['here', '1']])
    assert.deepEqual([...room.mark().position], [], 'the replayed entries are behind the trim')
  })

  it('joins the trims asked for while one runs: each writer trimmed to the latest position asked for', async () => {
    const released = deferred()
    const journal = new (class extends PositionedJournal {
      override async trim(room: string, position: JournalPosition): Promise<void> {
        await released.promise
        await super.trim(room, position)
      }
    })()
    const room = roomJournal(journal)
    room.record(UPDATE)
    await until(() => room.isDurable, 'confirmed')
    room.saved(room.mark()) // trims here 1, and waits
    room.record(UPDATE)
    await until(() => room.isDurable, 'confirmed')
    room.saved(room.mark()) // here 2, asked for while the first runs
    room.adopted(new Map([['gone', '5']]))
    room.trimHeld() // gone 5, asked for too: it must not take the place of here 2
    released.resolve()
    await until(() => journal.trims.length === 2, 'both trims made')
    assert.deepEqual(
      journal.trims.map((position) => Object.fromEntries(position)),
      [{ here: '1' }, { here: '2', gone: '5' }],
    )
  })
})
