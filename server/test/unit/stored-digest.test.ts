import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { digestOf, digestOfState, holdsNothingBeyond } from '../../src/core/anti-entropy.js'
import { edit, random, syncAll } from './support/random-histories.js'

/** A server's copy: a new document that applied `states` in order. */
function copyOf(...states: Uint8Array[]): Y.Doc {
  const doc = new Y.Doc()
  for (const state of states) Y.applyUpdate(doc, state)
  return doc
}

describe('the digest of a stored state: a room that absorbed it holds nothing more', () => {
  it('answers as Yjs snapshots compare, over random histories of every root kind', () => {
    const answers = { same: 0, more: 0 }
    for (let seed = 1; seed <= 200; seed++) {
      const pick = random(seed)
      const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
      const steps = 5 + pick(40)
      for (let step = 0; step < steps; step++) {
        edit(docs[pick(docs.length)] as Y.Doc, pick)
        if (pick(3) === 0) syncAll(docs)
      }
      if (pick(3) === 0) syncAll(docs) // often nothing is left to save
      // Sometimes one copy only deletes: its state vector stays that of the others.
      if (pick(3) === 0) {
        const text = (docs[0] as Y.Doc).getText('text')
        if (text.length > 0) text.delete(0, 1)
      }
      const [room, saver] = [docs[pick(3)] as Y.Doc, docs[pick(3)] as Y.Doc]
      const stored = Y.encodeStateAsUpdate(saver)
      const absorbed = copyOf(Y.encodeStateAsUpdate(room), stored)
      const expected = Y.equalSnapshots(Y.snapshot(absorbed), Y.snapshot(copyOf(stored)))
      assert.deepEqual(digestOfState(stored), digestOf(copyOf(stored)), `seed ${seed}: read from the bytes`)
      assert.equal(holdsNothingBeyond(absorbed, digestOfState(stored)), expected, `seed ${seed}`)
      answers[expected ? 'same' : 'more']++
    }
    assert.ok(answers.same >= 30 && answers.more >= 30, `both answers are tried: ${JSON.stringify(answers)}`)
  })

  it('counts a deletion the stored state lacks, though no struct is new', () => {
    const doc = new Y.Doc()
    doc.getText('t').insert(0, 'ab')
    const stored = Y.encodeStateAsUpdate(doc)
    doc.getText('t').delete(1, 1)
    assert.deepEqual(Y.encodeStateVector(doc), Y.encodeStateVectorFromUpdate(stored))
    assert.equal(holdsNothingBeyond(doc, digestOfState(stored)), false)
    assert.equal(holdsNothingBeyond(doc, digestOfState(Y.encodeStateAsUpdate(doc))), true)
  })

  it('answers false while anything waits for a missing dependency', () => {
    const source = new Y.Doc()
    source.getText('t').insert(0, 'a')
    const first = Y.encodeStateAsUpdate(source)
    source.getText('t').insert(1, 'b')
    const second = Y.encodeStateAsUpdate(source, Y.encodeStateVectorFromUpdate(first))
    const doc = copyOf(second) // waits for `first`
    assert.equal(holdsNothingBeyond(doc, digestOfState(Y.encodeStateAsUpdate(doc))), false)
  })
})
