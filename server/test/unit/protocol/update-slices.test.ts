import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { arrayOfObjectsUpdate } from '../../../../loadtest/src/bench/json-values.js'
import { DocumentTooLargeError } from '../../../src/errors.js'
import { contentCostOf, MAX_ITEM_VALUE_ELEMENTS, scanUpdate } from '../../../src/protocol/update-scan.js'
import { sliceUpdate } from '../../../src/protocol/update-slices.js'
import { seededRandom } from '../../helpers/seeded-random.js'

type Random = () => number

/** A document edited concurrently by a few clients that sync now and then, merged at the end. */
function concurrentDocument(random: Random): Uint8Array {
  const docs = Array.from({ length: 2 + Math.floor(random() * 3) }, () => new Y.Doc())
  for (let step = 0; step < 300; step++) {
    const doc = docs[Math.floor(random() * docs.length)] as Y.Doc
    edit(doc, random)
    if (random() < 0.2) {
      const other = docs[Math.floor(random() * docs.length)] as Y.Doc
      Y.applyUpdate(other, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(other)))
    }
  }
  const merged = new Y.Doc()
  for (const doc of docs) Y.applyUpdate(merged, Y.encodeStateAsUpdate(doc))
  return Y.encodeStateAsUpdate(merged)
}

function edit(doc: Y.Doc, random: Random): void {
  const at = (length: number) => Math.floor(random() * (length + 1))
  const key = () => `s${Math.floor(random() * 20)}`
  const text = doc.getText('text')
  const shapes = doc.getMap('shapes')
  const list = doc.getArray<unknown>('list')
  const edits = [
    () => text.insert(at(text.length), `w${Math.floor(random() * 100)} `),
    () => text.length > 2 && text.delete(at(text.length - 2), 1 + Math.floor(random() * 2)),
    () => text.length > 0 && text.format(0, at(text.length), { bold: random() < 0.5 ? true : null }),
    () => {
      const shape = new Y.Map<unknown>()
      shape.set('x', random())
      shape.set('label', new Y.Text('shape'))
      shapes.set(key(), shape)
    },
    () => {
      const shape = shapes.get(key())
      if (shape instanceof Y.Map) shape.set('x', random())
      else shapes.delete(key())
    },
    () => list.insert(at(list.length), [random(), { nested: [1, 'two'] }, new Uint8Array([1, 2])]),
    () => list.length > 0 && list.delete(at(list.length - 1), 1),
  ]
  edits[Math.floor(random() * edits.length)]?.()
}

const deletedClocks = (slice: Uint8Array) =>
  [...Y.decodeUpdate(slice).ds.clients.values()].flat().reduce((sum, item) => sum + item.len, 0)

describe('update slices', () => {
  it('rebuild the same document, each slice applying without anything left pending', () => {
    const { random, replayable } = seededRandom('SYMPHONY_SLICES_SEED')
    try {
      for (let round = 0; round < 20; round++) {
        const state = concurrentDocument(random)
        const perSlice = 1 + Math.floor(random() * 20)
        const { slices } = sliceUpdate(state, perSlice)
        assert.ok(slices.length > 1, 'cut into several slices')
        const doc = new Y.Doc()
        for (const slice of slices) {
          assert.ok(Y.decodeUpdate(slice).structs.length <= perSlice, 'at most the budget of structs')
          assert.ok(deletedClocks(slice) <= perSlice * 8, 'at most the budget of deleted clocks')
          Y.applyUpdate(doc, slice)
          assert.equal(doc.store.pendingStructs, null, 'what a struct points at came before it')
          assert.equal(doc.store.pendingDs, null)
        }
        const whole = new Y.Doc()
        Y.applyUpdate(whole, state)
        assert.deepEqual(Y.encodeStateAsUpdate(doc), Y.encodeStateAsUpdate(whole))
        assert.deepEqual(doc.toJSON(), whole.toJSON())
      }
    } catch (error) {
      throw replayable(error, 'server/test/unit/protocol/update-slices.test.ts')
    }
  })

  it('cuts a long deleted range to fit the budget', () => {
    const doc = new Y.Doc()
    const text = doc.getText('text')
    for (let i = 0; i < 100; i++) text.insert(text.length, 'abcdefghij') // one merged struct per insert run
    text.delete(0, 1000)
    const { slices } = sliceUpdate(Y.encodeStateAsUpdate(doc), 5)
    const deletions = slices.filter((slice) => deletedClocks(slice) > 0)
    assert.equal(deletions.length, 25, '1,000 deleted clocks, 40 per slice')
    const rebuilt = new Y.Doc()
    for (const slice of slices) Y.applyUpdate(rebuilt, slice)
    assert.equal(rebuilt.getText('text').toString(), '')
    assert.deepEqual(Y.encodeStateVector(rebuilt), Y.encodeStateVector(doc))
  })

  it('leaves a state with a gap whole: its later structs could only wait', () => {
    const doc = new Y.Doc()
    const updates: Uint8Array[] = []
    doc.on('update', (update: Uint8Array) => updates.push(update))
    for (let i = 0; i < 30; i++) doc.getText('text').insert(0, `w${i} `)
    const withGap = Y.mergeUpdates([...updates.slice(0, 10), ...updates.slice(11)])
    assert.deepEqual(sliceUpdate(withGap, 5).slices, [withGap])
  })

  it('throws on a damaged update', () => {
    const doc = new Y.Doc()
    doc.getText('text').insert(0, 'hello world')
    const state = Y.encodeStateAsUpdate(doc)
    assert.throws(() => sliceUpdate(state.subarray(0, state.length - 4), 10))
  })
})

describe('what decoding builds', () => {
  const mapValueOf = (elements: number) => arrayOfObjectsUpdate({ elements })

  it('counts what JSON values build, far past their bytes', () => {
    const update = mapValueOf(10_000)
    const doc = new Y.Doc()
    Y.applyUpdate(doc, update)
    assert.equal((doc.getMap('map').get('key') as unknown[]).length, 10_000, 'the encoding is what Yjs reads')
    const { builtBytes } = scanUpdate(update)
    assert.ok(builtBytes >= 10_000 * 64, `10,000 objects build ${builtBytes} bytes (in ${update.length})`)
    assert.equal(contentCostOf(update).builtBytes, builtBytes)
    const text = new Y.Doc()
    text.getText('t').insert(0, 'x'.repeat(20_000))
    assert.equal(contentCostOf(Y.encodeStateAsUpdate(text)).builtBytes, 0, 'a text builds what its bytes say')
  })

  it(`refuses an item of more than ${MAX_ITEM_VALUE_ELEMENTS} JSON elements, one value or many, before building it`, () => {
    assert.doesNotThrow(() => scanUpdate(mapValueOf(MAX_ITEM_VALUE_ELEMENTS - 1))) // and the array itself
    assert.throws(() => scanUpdate(mapValueOf(MAX_ITEM_VALUE_ELEMENTS)), DocumentTooLargeError)
    const doc = new Y.Doc()
    doc.getArray('list').insert(
      0,
      Array.from({ length: MAX_ITEM_VALUE_ELEMENTS + 1 }, (_, i) => i),
    )
    assert.throws(() => scanUpdate(Y.encodeStateAsUpdate(doc)), /one item may hold 200000 at most/)
    assert.ok(
      contentCostOf(Y.encodeStateAsUpdate(doc)).builtBytes > 0,
      'a stored one is still counted, never refused',
    )
  })

  it('weighs a struct by what it builds: many big values are cut one or a few per slice', () => {
    const source = new Y.Doc()
    const map = source.getMap('map')
    for (let i = 0; i < 20; i++)
      map.set(
        `k${i}`,
        Array.from({ length: 2_000 }, () => ({})),
      )
    const update = Y.encodeStateAsUpdate(source)
    const { slices, cost } = sliceUpdate(update, 250)
    assert.equal(cost.builtBytes, contentCostOf(update).builtBytes, 'and says what the whole update costs')
    assert.ok(slices.length >= 10, `20 values of 2,000 objects in ${slices.length} slices`)
    const rebuilt = new Y.Doc()
    for (const slice of slices) Y.applyUpdate(rebuilt, slice)
    assert.deepEqual(rebuilt.getMap('map').toJSON(), map.toJSON())
  })
})
