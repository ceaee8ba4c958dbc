import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { eventually } from '../../src/contracts/eventually.js'
import { DocumentMemory, documentMemory, LARGE_GROWTH_BYTES } from '../../src/core/document-memory.js'
import { DOCUMENTS_SHARE, MemoryBudget, type MemoryHolder } from '../../src/core/memory-budget.js'
import { PRESENCE_ENTRY_BYTES, PresenceTable } from '../../src/core/presence-table.js'
import { type LogEntry, recordingLogger } from '../helpers/recording-logger.js'

/** A connection holding `heldBytes`, charged to `budget` as 'unsent'. */
class Holder implements MemoryHolder {
  shedAt: number | null = null
  static sheds = 0

  constructor(
    private readonly budget: MemoryBudget,
    public heldBytes: number,
    private readonly kind: 'unsent' | 'documents' = 'unsent',
  ) {
    budget.track(this, kind === 'documents' ? 'room' : 'connection')
    budget.charge(kind, heldBytes)
  }

  shed(): void {
    this.shedAt = Holder.sheds++
  }

  /** Its socket is gone. */
  gone(): void {
    this.budget.charge(this.kind, -this.heldBytes)
    this.budget.forget(this)
  }
}

/** An edit adding `structs` in `bytes` of plain content. */
const grows = (structs: number, bytes: number) => ({ structs, bytes, builtBytes: 0 })

function budgetOf(limitBytes: number, logs: LogEntry[] = []) {
  return new MemoryBudget({ limitBytes, logger: recordingLogger(logs) })
}

describe('the memory budget', () => {
  it('closes the connections holding the most until the rest fit, and no more', async () => {
    const logs: LogEntry[] = []
    const budget = budgetOf(1_000, logs)
    const small = [1, 2, 3].map(() => new Holder(budget, 100))
    const big = new Holder(budget, 400)
    assert.equal(budget.usedBytes, 700)
    const bigger = new Holder(budget, 500) // 1,200: over
    await eventually(() => bigger.shedAt !== null, 'the heaviest is shed')
    assert.equal(big.shedAt, null, 'shedding the heaviest brought it under: nobody else')
    for (const holder of small) assert.equal(holder.shedAt, null)
    assert.match(String(logs.at(-1)?.message), /over the memory budget/)

    // What a shed connection holds is about to be freed: a later round does not shed for it again.
    const huge = new Holder(budget, 600) // 1,800, of which 500 leaving: 300 to shed
    await eventually(() => huge.shedAt !== null, 'the heaviest left is shed')
    assert.equal(big.shedAt, null, 'the one leaving counted as gone')
    huge.gone()
    bigger.gone()
    assert.equal(budget.usedBytes, 700)
    budget.stop()
  })

  it('refuses a reservation that does not fit, charging nothing', () => {
    const budget = budgetOf(1_000)
    assert.equal(budget.reserve('big-update', 800), true)
    assert.equal(budget.reserve('big-update', 300), false)
    assert.equal(budget.usedBy('big-update'), 800)
    budget.charge('big-update', -800)
    assert.equal(budget.reserve('big-update', 300), true)
    budget.stop()
  })

  it(`keeps the documents to ${DOCUMENTS_SHARE * 100}% of it: past that, edits are refused and the largest rooms unloaded, not connections`, async () => {
    const logs: LogEntry[] = []
    const budget = budgetOf(1_000, logs)
    assert.equal(budget.documentsLimitBytes, 1_000 * DOCUMENTS_SHARE)
    const reader = new Holder(budget, 150) // a connection holding more than the small room
    const small = new Holder(budget, 100, 'documents')
    const large = new Holder(budget, 500, 'documents')
    assert.equal(budget.reserve('documents', budget.documentsLimitBytes - 600), true, 'up to the share')
    assert.equal(budget.reserve('documents', 1), false, 'an edit past the share is refused')
    assert.equal(budget.reserve('big-update', 50), true, 'the rest of the budget is the traffic’s')
    budget.charge('big-update', -50)
    budget.charge('documents', -(budget.documentsLimitBytes - 600))

    budget.charge('documents', 250) // a room loaded: 850 in documents, past the share of 800
    await eventually(() => large.shedAt !== null, 'the largest room unloads')
    assert.equal(small.shedAt, null)
    assert.equal(reader.shedAt, null, 'connections are not shed for documents: the total is under the limit')
    assert.match(String(logs.at(-1)?.message), /documents over their share/)

    // Someone joined it before it unloaded: it may be shed again.
    budget.track(large, 'room')
    budget.charge('documents', 1)
    const firstShed = large.shedAt
    await eventually(() => large.shedAt !== firstShed, 'shed again')
    large.gone()
    assert.equal(budget.usedBy('documents'), 351)
    budget.stop()
  })

  it('lets small edits grow a document until the documents hold the whole budget; big ones only within their share', () => {
    const budget = budgetOf(1_000_000)
    const room = new DocumentMemory(budget)
    room.update(0, 0, 0)
    const structs = 1_000 // 250,000 bytes a time, with 0 bytes of encoding
    for (let i = 0; i < 3; i++) assert.equal(room.reserveGrowth(grows(structs, 0), true), true)
    assert.equal(budget.usedBy('documents'), 750_000, 'a big edit is charged as it is let in')
    assert.equal(room.reserveGrowth(grows(structs, 0), true), false, 'a big edit past the share (800,000)')
    assert.equal(budget.usedBy('documents'), 750_000, 'and a refused one is not')
    assert.equal(room.reserveGrowth(grows(structs, 0), false), true, 'a small one passes')
    room.update(4 * structs, 0, 0) // it applied: charged by the update after it
    assert.equal(budget.documents(), 'over-share')
    assert.equal(room.reserveGrowth(grows(structs, 0), false), true)
    room.update(5 * structs, 0, 0)
    assert.equal(budget.documents(), 'full')
    assert.equal(room.reserveGrowth(grows(1, 0), false), false, 'past the whole budget, none')
    assert.equal(room.reserveGrowth(grows(0, 500), false), true, 'a deletion always')
    room.update(10, 100, 0) // counted again
    assert.equal(budget.usedBy('documents'), documentMemory(10, 100))
    room.release()
    assert.equal(budget.usedBy('documents'), 0)
    assert.equal(room.reserveGrowth(grows(structs, 0), true), true, 'an unloaded room charges nothing more')
    assert.equal(budget.usedBy('documents'), 0)
    budget.stop()
  })

  it('holds an edit that builds much to the share, however small its encoding', () => {
    const budget = budgetOf(8 * LARGE_GROWTH_BYTES)
    const room = new DocumentMemory(budget)
    const share = budget.documentsLimitBytes
    room.update(0, 0, share - LARGE_GROWTH_BYTES)
    const values = { structs: 1, bytes: 200_000, builtBytes: 6 * LARGE_GROWTH_BYTES }
    assert.equal(
      room.reserveGrowth(values, false),
      false,
      'a small update of many values: refused past the share',
    )
    assert.equal(room.reserveGrowth(grows(1, 200_000), false), true, 'the same bytes of text pass')
    room.update(0, 0, 0)
    assert.equal(room.reserveGrowth(values, false), true, 'within the share, let in and charged at once')
    assert.equal(budget.usedBy('documents'), documentMemory(1, 200_000, 6 * LARGE_GROWTH_BYTES))
    budget.stop()
  })

  it('charges a buffer queued on many sockets once, and frees it with the last', () => {
    const budget = budgetOf(1_000)
    const answer = new Uint8Array(600)
    for (let i = 0; i < 5; i++) budget.hold(answer)
    assert.equal(budget.usedBy('unsent'), 600)
    assert.equal(budget.holders(answer), 5)
    for (let i = 0; i < 4; i++) budget.release(answer)
    assert.equal(budget.usedBy('unsent'), 600)
    budget.release(answer)
    assert.equal(budget.usedBy('unsent'), 0)
    budget.release(answer) // a late callback: nothing more to free
    assert.equal(budget.usedBy('unsent'), 0)
    budget.stop()
  })

  it('charges presence as the table grows and shrinks', () => {
    const budget = budgetOf(1_000_000)
    const table = new PresenceTable((bytes) => budget.charge('presence', bytes))
    const state = (text: string) => new TextEncoder().encode(JSON.stringify({ text }))
    table.apply([{ clientId: 1, clock: 1, state: state('a'.repeat(100)) }], 0)
    const first = PRESENCE_ENTRY_BYTES + state('a'.repeat(100)).length
    assert.equal(budget.usedBy('presence'), first)
    table.apply([{ clientId: 1, clock: 2, state: state('b') }], 0)
    assert.equal(budget.usedBy('presence'), PRESENCE_ENTRY_BYTES + state('b').length)
    table.remove([1], 0)
    assert.equal(budget.usedBy('presence'), PRESENCE_ENTRY_BYTES, 'the clock is kept a while')
    table.present(60_000) // long gone: forgotten
    assert.equal(budget.usedBy('presence'), 0)
    assert.equal(table.bytes, 0)
    budget.stop()
  })
})
