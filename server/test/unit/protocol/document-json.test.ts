import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { documentToJson } from '../../../src/protocol/document-json.js'

describe('a Yjs document as JSON', () => {
  it('reads each root type by shape: maps, lists, and texts even when their start was deleted', () => {
    const doc = new Y.Doc()
    doc.getMap('shapes').set('a', { x: 1 })
    doc.getArray('log').push(['one', 2])
    const title = doc.getText('title')
    title.insert(0, 'Hello world')
    title.delete(0, 6) // the first item is now deleted
    const notes = doc.getText('notes')
    notes.insert(0, 'bold', { bold: true }) // starts with a formatting mark
    assert.deepEqual(documentToJson(Y.encodeStateAsUpdate(doc)), {
      shapes: { a: { x: 1 } },
      log: ['one', 2],
      title: 'world',
      notes: 'bold',
    })
  })
})
