import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { EditEncoder } from '../src/virtual-users/edit-encoder.js'
import { documentContent, type EditRecord, writeRecord } from '../src/virtual-users/records.js'

/** Records with every kind of number the workload sends: small and large integers, fractions. */
function records(user: number): EditRecord[] {
  return [
    { u: user, s: 1, t: 12.25, x: 1, y: user },
    { u: user, s: 2, t: 1234567.891234, x: -5, y: 2 ** 40 },
    { u: user, s: 3, t: 0.1, x: 999, y: 0 },
  ]
}

describe('edits written without a Y.Doc', () => {
  for (const edit of ['set', 'append'] as const) {
    it(`are byte for byte what a Y.Doc emits (${edit})`, () => {
      const doc = new Y.Doc()
      const emitted: Uint8Array[] = []
      doc.on('update', (update: Uint8Array) => emitted.push(update))
      const encoder = new EditEncoder(doc.clientID, edit)
      const written = records(7).map((record) => {
        writeRecord(doc, edit, record)
        return encoder.encode(record)
      })
      assert.deepEqual(written, emitted)
      assert.equal(encoder.clock, 3)
    })

    it(`build the same document as a Y.Doc when two users interleave (${edit})`, () => {
      const [reference, replica] = [new Y.Doc(), new Y.Doc()]
      const encoders = [new EditEncoder(11, edit), new EditEncoder(22, edit)]
      const writers = [new Y.Doc(), new Y.Doc()]
      writers.forEach((doc, i) => {
        doc.clientID = [11, 22][i] as number
      })
      for (let step = 0; step < 3; step++) {
        for (const [i, encoder] of encoders.entries()) {
          const record = records(i + 1)[step] as EditRecord
          const writer = writers[i] as Y.Doc
          const before = Y.encodeStateVector(writer)
          writeRecord(writer, edit, record)
          Y.applyUpdate(reference, Y.encodeStateAsUpdate(writer, before))
          Y.applyUpdate(replica, encoder.encode(record))
        }
      }
      assert.equal(documentContent(replica), documentContent(reference))
      assert.deepEqual(Y.encodeStateVector(replica), Y.encodeStateVector(reference))
    })
  }
})
