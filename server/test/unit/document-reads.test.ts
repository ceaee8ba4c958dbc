import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { DOCUMENT_BYTES_PER_BYTE, DocumentReads, MAX_DOCUMENT_READS } from '../../src/core/document-reads.js'
import { MemoryBudget } from '../../src/core/memory-budget.js'
import { ServerBusyError } from '../../src/errors.js'
import { silentLogger } from '../../src/logger.js'

function stateOf(text: string): Uint8Array {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  return Y.encodeStateAsUpdate(doc)
}

describe('reading documents as JSON', () => {
  it(`reads ${MAX_DOCUMENT_READS} at once, one after another, and refuses more (503) rather than queue them`, async () => {
    const budget = new MemoryBudget({ limitBytes: 64 << 20, logger: silentLogger })
    const reads = new DocumentReads(budget)
    const state = stateOf('hello')
    const answers = await Promise.allSettled(
      Array.from({ length: MAX_DOCUMENT_READS + 1 }, () => reads.jsonText(state)),
    )
    const read = answers.filter((answer) => answer.status === 'fulfilled')
    assert.equal(read.length, MAX_DOCUMENT_READS)
    assert.deepEqual(JSON.parse((read[0] as PromiseFulfilledResult<string>).value), { t: 'hello' })
    const refused = answers.find((answer) => answer.status === 'rejected') as PromiseRejectedResult
    assert.ok(refused.reason instanceof ServerBusyError)
    assert.equal(budget.usedBy('reads'), 0, 'what they reserved is returned')
    assert.equal(JSON.parse(await reads.jsonText(state)).t, 'hello', 'and reads go on after')
    budget.stop()
  })

  it('charges a read before it decodes anything, and refuses one the budget cannot take (503)', async () => {
    const state = stateOf('x'.repeat(10_000))
    const budget = new MemoryBudget({
      limitBytes: DOCUMENT_BYTES_PER_BYTE * state.length,
      logger: silentLogger,
    })
    const reads = new DocumentReads(budget)
    await assert.rejects(reads.jsonText(state), ServerBusyError)
    assert.equal(budget.usedBy('reads'), 0)
    const known = new DocumentReads(budget)
    const text = await known.jsonText(state, 1_000) // a loaded room says what its document holds
    assert.equal((JSON.parse(text) as { t: string }).t.length, 10_000)
    budget.stop()
  })
})
