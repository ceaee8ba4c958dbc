import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { encodeMapEntries, type MapEntry } from '../../../src/protocol/map-entries.js'

/** The entry's replaced item, as the document holds it. */
function current(map: Y.Map<unknown>, key: string): MapEntry['replaces'] {
  const item = map._map.get(key)
  return item ? { client: item.id.client, clock: item.id.clock, length: item.length } : null
}

describe('map entries encoded without a document', () => {
  it('are byte for byte what Yjs makes of map.set, new keys and replaced ones, from any clock', () => {
    const doc = new Y.Doc()
    doc.clientID = 4_000_000_001
    const map = doc.getMap<unknown>('symphony:authors')
    const other = new Y.Doc()
    other.clientID = 7
    other.getMap('symphony:authors').set('@alice', 'Alice')
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(other))
    const batches: [string, string][][] = [
      [['12', 'alice']],
      [
        ['13', 'bob'],
        ['@alice', 'Alice B.'],
        ['14', 'émile ✓ 😀'],
      ],
      [
        ['@alice', 'Alice C.'],
        ['@bob', 'Bob'],
      ],
    ]
    for (const batch of batches) {
      let theirs: Uint8Array | null = null
      doc.once('update', (update: Uint8Array) => {
        theirs = update
      })
      const entries = batch.map(([key, value]) => ({ key, value, replaces: current(map, key) }))
      const ours = encodeMapEntries(
        'symphony:authors',
        doc.clientID,
        Y.getState(doc.store, doc.clientID),
        entries,
      )
      doc.transact(() => {
        for (const [key, value] of batch) map.set(key, value)
      })
      assert.deepEqual(ours, theirs, 'what the transaction emitted')
    }
    const copy = new Y.Doc()
    Y.applyUpdate(copy, Y.encodeStateAsUpdate(doc))
    assert.deepEqual(copy.getMap('symphony:authors').toJSON(), {
      '@alice': 'Alice C.',
      '@bob': 'Bob',
      '12': 'alice',
      '13': 'bob',
      '14': 'émile ✓ 😀',
    })
  })

  it('encode nothing as an empty update', () => {
    assert.deepEqual(encodeMapEntries('m', 1, 0, []), new Uint8Array([0, 0]))
  })
})
