import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { applySentUpdate } from '../../src/core/apply-sent-update.js'
import { ProtocolError } from '../../src/errors.js'

/** An update that inserts `text` into a fresh document's text `t`. */
function insertion(text: string): Uint8Array {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  return Y.encodeStateAsUpdate(doc)
}

describe('applying an update a client sent', () => {
  it("blames bytes Yjs cannot read on the sender: a ProtocolError, whatever Yjs's own error was", () => {
    const doc = new Y.Doc()
    for (const garbage of [[1, 200, 3, 4, 5, 6, 7, 8], [0xff], [2, 1, 0xff, 0xff, 0xff]]) {
      assert.throws(
        () => applySentUpdate(doc, new Uint8Array(garbage), 'client'),
        ProtocolError,
        String(garbage),
      )
    }
  })

  it('lets a failing observer of the document through as it is: the server failed, not the sender', () => {
    const doc = new Y.Doc()
    const bug = new Error('observer bug')
    doc.on('afterTransaction', () => {
      throw bug
    })
    assert.throws(
      () => applySentUpdate(doc, insertion('hello'), 'client'),
      (error: unknown) => error === bug,
    )
    assert.equal(doc.getText('t').toString(), 'hello', 'the update itself was applied')
  })

  it('applies a sound update under the given origin, as one transaction', () => {
    const doc = new Y.Doc()
    const origins: unknown[] = []
    doc.on('update', (_update: Uint8Array, origin: unknown) => origins.push(origin))
    applySentUpdate(doc, insertion('hi'), 'client-7')
    assert.equal(doc.getText('t').toString(), 'hi')
    assert.deepEqual(origins, ['client-7'])
  })
})
