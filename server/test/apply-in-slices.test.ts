import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import * as Y from 'yjs'
import { applyInSlices as builtApplyInSlices } from '../dist/core/apply-in-slices.js'
import { applyInSlices } from '../src/core/apply-in-slices.js'

/** About 400 KiB of shapes and typed text: big enough to be sliced. */
function bigDocument(): Uint8Array {
  const doc = new Y.Doc()
  const shapes = doc.getMap('shapes')
  const notes = doc.getText('notes')
  for (let round = 0; round < 120; round++) {
    doc.transact(() => {
      for (let i = 0; i < 200; i++) shapes.set(`shape-${i}`, { x: i, y: round, fill: '#3355ff' })
    })
    for (let i = 0; i < 100; i++) notes.insert(notes.length, `word${i} `)
  }
  return Y.encodeStateAsUpdate(doc)
}

// The worker is found beside the module, .ts from source and .js when built: both are checked.
for (const [build, apply] of [
  ['from source', applyInSlices],
  ['built', builtApplyInSlices],
] as const) {
  describe(`applyInSlices, ${build}`, () => {
    it('applies a big state in many transactions, one per event-loop turn, to the same document', async () => {
      const state = bigDocument()
      assert.ok(state.length > 256 * 1024)
      const doc = new Y.Doc()
      let turn = 0
      let loading = true
      const ticking = (async () => {
        while (loading) {
          turn++
          await nextTurn()
        }
      })()
      const transactionTurns: number[] = []
      doc.on('afterTransaction', () => transactionTurns.push(turn))
      await apply(doc, state)
      loading = false
      await ticking
      assert.ok(transactionTurns.length > 20, `sliced: ${transactionTurns.length} transactions`)
      assert.equal(new Set(transactionTurns).size, transactionTurns.length, 'never two in one turn')
      assert.deepEqual(Y.encodeStateAsUpdate(doc), state)
    })

    it('applies a small state in one transaction', async () => {
      const source = new Y.Doc()
      source.getText('t').insert(0, 'small')
      const doc = new Y.Doc()
      let transactions = 0
      doc.on('afterTransaction', () => transactions++)
      await apply(doc, Y.encodeStateAsUpdate(source))
      assert.equal(transactions, 1)
      assert.equal(doc.getText('t').toString(), 'small')
    })

    it('rejects a damaged big state, as applying it in one go would', async () => {
      const state = bigDocument()
      await assert.rejects(apply(new Y.Doc(), state.subarray(0, state.length - 100)))
    })
  })
}
