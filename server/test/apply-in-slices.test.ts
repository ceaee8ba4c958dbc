import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import * as Y from 'yjs'
import * as built from '../dist/core/apply-in-slices.js'
import * as fromSource from '../src/core/apply-in-slices.js'

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
/** Counts event-loop turns until stopped, so a test can see which turn each transaction ran in. */
function turnCounter(doc: Y.Doc) {
  let turn = 0
  let counting = true
  const ticking = (async () => {
    while (counting) {
      turn++
      await nextTurn()
    }
  })()
  const transactionTurns: number[] = []
  doc.on('afterTransaction', () => transactionTurns.push(turn))
  return {
    transactionTurns,
    stop: async () => {
      counting = false
      await ticking
    },
  }
}

for (const [build, { applyInSlices: apply, replayInTurns }] of [
  ['from source', fromSource],
  ['built', built],
] as const) {
  describe(`applyInSlices, ${build}`, () => {
    it('applies a big state in many transactions, one per event-loop turn, to the same document', async () => {
      const state = bigDocument()
      assert.ok(state.length > 256 * 1024)
      const doc = new Y.Doc()
      const { transactionTurns, stop } = turnCounter(doc)
      await apply(doc, state)
      await stop()
      assert.ok(transactionTurns.length > 20, `sliced: ${transactionTurns.length} transactions`)
      assert.equal(new Set(transactionTurns).size, transactionTurns.length, 'never two in one turn')
      assert.deepEqual(Y.encodeStateAsUpdate(doc), state)
    })

    it('hands `reserve` the state’s bytes before any work on it, the rest of its cost before building any of it', async () => {
      const state = bigDocument()
      const costs: { structs: number; bytes: number }[] = []
      const refusingAfter =
        (allowed: number) => (cost: { structs: number; bytes: number; builtBytes: number }) => {
          costs.push(cost)
          if (costs.length > allowed) throw new Error('no memory')
        }
      const doc = new Y.Doc()
      await assert.rejects(apply(doc, state, { reserve: refusingAfter(1) }), /no memory/)
      assert.deepEqual(costs[0], { structs: 0, builtBytes: 0, bytes: state.length }, 'first its bytes')
      assert.equal(costs.length, 2, 'then once, for the rest of the whole state')
      assert.equal(costs[1]?.bytes, 0)
      assert.ok((costs[1]?.structs ?? 0) > 1_000, `${costs[1]?.structs} structs`)
      assert.equal(doc.store.clients.size, 0, 'nothing applied')
      // Refused for its bytes, a state is never read: a damaged one is refused as one that cannot fit.
      costs.length = 0
      const damaged = state.subarray(0, state.length - 100)
      await assert.rejects(apply(new Y.Doc(), damaged, { reserve: refusingAfter(0) }), /no memory/)
      assert.equal(costs.length, 1)
    })

    it('applies the rest in one go once a slice leaves structs waiting for a missing client', async () => {
      const first = new Y.Doc()
      first.getText('t').insert(0, 'from a client the state lacks ')
      const second = new Y.Doc()
      Y.applyUpdate(second, Y.encodeStateAsUpdate(first))
      const text = second.getText('t')
      for (let i = 0; i < 30_000; i++) text.insert(i % 2 === 0 ? 0 : text.length, `w${i} `)
      const lacking = Y.diffUpdate(Y.encodeStateAsUpdate(second), Y.encodeStateVector(first))
      assert.ok(lacking.length > 256 * 1024)
      const doc = new Y.Doc()
      let transactions = 0
      doc.on('afterTransaction', () => transactions++)
      await apply(doc, lacking)
      assert.equal(transactions, 2, 'one slice, then everything else at once')
      Y.applyUpdate(doc, Y.encodeStateAsUpdate(first)) // the missing client arrives
      assert.equal(doc.store.pendingStructs, null)
      assert.equal(doc.getText('t').toString(), text.toString())
    })

    it(`resolves with the document's own encoding when the worker made it (${build})`, async () => {
      const clean = bigDocument()
      // Deleted text kept by a byte-wise merge, as a snapshot from an older writer may hold.
      const writer = new Y.Doc()
      const typed: Uint8Array[] = []
      writer.on('update', (update: Uint8Array) => typed.push(update))
      writer.getText('t').insert(0, 'secret '.repeat(60_000))
      writer.getText('t').delete(0, 7 * 50_000)
      const unclean = Y.mergeUpdates(typed)
      assert.ok(unclean.length > 256 * 1024)
      const cleanDoc = new Y.Doc()
      const uncleanDoc = new Y.Doc()
      const [fromClean, fromUnclean] = [
        (await apply(cleanDoc, clean)).encoded,
        (await apply(uncleanDoc, unclean)).encoded,
      ]
      if (build === 'from source') {
        // No worker from TypeScript source: the room encodes on demand instead.
        assert.equal(fromClean, null)
        assert.equal(fromUnclean, null)
        return
      }
      assert.equal(fromClean, clean, 'a state that is its own encoding comes back as it is')
      assert.deepEqual(fromUnclean, Y.encodeStateAsUpdate(uncleanDoc))
      assert.ok(fromUnclean && fromUnclean.length < unclean.length / 2, 'the deleted text is gone')
      // Into a document that already holds something, the state alone is not its encoding.
      assert.equal((await apply(uncleanDoc, clean)).encoded, null)
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

  describe(`replayInTurns, ${build}`, () => {
    it('replays a long journal a few hundred updates per turn, skipping a damaged entry', async () => {
      const source = new Y.Doc()
      const updates: Uint8Array[] = []
      source.on('update', (update: Uint8Array) => updates.push(update))
      for (let i = 0; i < 2_000; i++) source.getArray('log').push([`record ${i} `.padEnd(60, '.')])
      const damaged = (updates[1_000] as Uint8Array).subarray(0, 10)
      const journal = [...updates.slice(0, 1_000), damaged, ...updates.slice(1_000)]
      const doc = new Y.Doc()
      const { transactionTurns, stop } = turnCounter(doc)
      const skipped: unknown[] = []
      const { bytes } = await replayInTurns(doc, journal, { skipped: (error) => skipped.push(error) })
      await stop()
      assert.equal(skipped.length, 1, 'the damaged entry is reported')
      assert.equal(
        bytes,
        updates.reduce((sum, update) => sum + update.length, 0),
      )
      assert.deepEqual(doc.getArray('log').toJSON(), source.getArray('log').toJSON())
      const perTurn = new Map<number, number>()
      for (const turn of transactionTurns) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1)
      const most = Math.max(...perTurn.values())
      assert.ok(perTurn.size > 5 && most < 500, `${perTurn.size} turns, at most ${most} updates in one`)
    })
  })
}
