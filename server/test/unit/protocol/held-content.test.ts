import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { HeldContent, rangesOf } from '../../../src/protocol/held-content.js'
import { scanUpdate } from '../../../src/protocol/update-scan.js'

const refused = (error: unknown) => (error as { code?: string }).code === 'PROTOCOL_ERROR'

/** A document of client `id` holding `write`'s edits, and those edits as one update. */
function written(
  id: number,
  write: (doc: Y.Doc) => void,
  base?: Uint8Array,
): { doc: Y.Doc; update: Uint8Array } {
  const doc = new Y.Doc()
  if (base) Y.applyUpdate(doc, base)
  doc.clientID = id // after: Yjs picks another id when an applied update uses its own
  const before = Y.encodeStateVector(doc)
  write(doc)
  return { doc, update: Y.encodeStateAsUpdate(doc, before) }
}

/** A room holding `updates`. */
function room(...updates: Uint8Array[]): { doc: Y.Doc; held: HeldContent } {
  const doc = new Y.Doc()
  for (const update of updates) Y.applyUpdate(doc, update)
  return { doc, held: new HeldContent(doc) }
}

describe('content under ids a room holds', () => {
  it('lets through what the room holds, whole, from any earlier state, or cut anywhere', () => {
    const { doc: writer, update } = written(1, (d) => {
      d.getText('t').insert(0, 'hello 😀 world', { bold: true })
      d.getMap('m').set('k', { deep: [1, 'two', null] })
      d.getArray('a').insert(0, [new Y.Map(), new Uint8Array([1, 2]), 3.5])
      d.getXmlFragment('x').insert(0, [new Y.XmlElement('p')])
    })
    writer.getText('t').delete(2, 3) // deleted here, not yet in the room: compared by length
    const { held } = room(update)
    held.compare(Y.encodeStateAsUpdate(writer))
    for (let clock = 1; clock < Y.getState(writer.store, 1); clock++) {
      // From mid-item: the first struct's origin is the unit before it, its content the rest.
      const sv = Y.encodeStateVector(new Map([[1, clock]]) as never)
      const resend = Y.diffUpdate(Y.encodeStateAsUpdate(writer), sv)
      const copy = room(update).doc
      Y.applyUpdate(copy, resend)
      const cutsEmoji = copy.getText('t').toString().includes('\ufffd') // what Yjs would make of it
      if (cutsEmoji) assert.throws(() => held.compare(resend), refused)
      else held.compare(resend)
    }
  })

  it('compares deleted and collected content by length only', () => {
    const { doc: writer, update } = written(1, (d) => d.getText('t').insert(0, 'secret'))
    const { doc, held } = room(update)
    doc.getText('t').delete(0, 6) // the room collects the content
    const other = written(1, (d) => d.getText('t').insert(0, 'XXXXXX')).update
    held.compare(other) // the room no longer knows what was there
    held.compare(Y.encodeStateAsUpdate(writer))
  })

  it('refuses other text, values, keys, positions, formatting or types under held ids', () => {
    const original = written(1, (d) => {
      d.getText('t').insert(0, 'Pay Bob')
      d.getMap('m').set('k', 1)
    }).update
    const { held } = room(original)
    const forgeries = [
      written(1, (d) => {
        d.getText('t').insert(0, 'Pay Eve')
        d.getMap('m').set('k', 1)
      }).update,
      written(1, (d) => {
        d.getText('t').insert(0, 'Pay Bob')
        d.getMap('m').set('k', 2)
      }).update,
      written(1, (d) => {
        d.getText('t').insert(0, 'Pay Bob')
        d.getMap('m').set('j', 1)
      }).update,
      written(1, (d) => {
        d.getText('u').insert(0, 'Pay Bob')
        d.getMap('m').set('k', 1)
      }).update,
      written(1, (d) => {
        d.getText('t').insert(0, 'Pay Bob', { bold: true })
        d.getMap('m').set('k', 1)
      }).update,
      written(1, (d) => {
        d.getArray('t').insert(0, ['P', 'a', 'y', ' ', 'B', 'o', 'b'])
        d.getMap('m').set('k', 1)
      }).update,
    ]
    for (const forgery of forgeries) assert.throws(() => held.compare(forgery), refused)
  })

  it('refuses the same text inserted elsewhere', () => {
    const base = written(2, (d) => d.getText('t').insert(0, 'ab')).update
    const atStart = written(1, (d) => d.getText('t').insert(0, 'X'), base).update
    const atEnd = written(1, (d) => d.getText('t').insert(2, 'X'), base).update
    const { held } = room(base, atStart)
    held.compare(atStart)
    assert.throws(() => held.compare(atEnd), refused)
  })

  it('refuses a resend that starts inside a character (Yjs would cut the room’s copy of it in two)', () => {
    const { doc: writer, update } = written(1, (d) => d.getText('t').insert(0, 'a😀b'))
    const { held } = room(update)
    const between = (clock: number) =>
      Y.diffUpdate(Y.encodeStateAsUpdate(writer), Y.encodeStateVector(new Map([[1, clock]]) as never))
    assert.throws(() => held.compare(between(2)), refused) // between the emoji's two halves
    const copy = room(update).doc
    Y.applyUpdate(copy, between(2))
    assert.equal(copy.getText('t').toString(), 'a\ufffd\ufffdb', 'what Yjs makes of it')
    held.compare(between(1))
    held.compare(between(3))
  })

  it('compares against what the room holds waiting, and counts it as held', () => {
    const first = written(1, (d) => d.getText('t').insert(0, 'a'))
    const second = written(1, (d) => d.getText('t').insert(1, 'bcd'), first.update).update
    const { doc, held } = room(second) // waits for the first
    assert.ok(doc.store.pendingStructs)
    held.compare(second)
    const forged = written(1, (d) => d.getText('t').insert(1, 'xyz'), first.update).update
    assert.throws(() => held.compare(forged), refused)
    const ranges = (update: Uint8Array) => rangesOf(scanUpdate(update))
    assert.deepEqual(held.written(ranges(second)), [], 'held waiting: not a write')
    assert.deepEqual(held.written(ranges(first.update)), [1], 'the first item is new')
    assert.equal(held.overlaps(ranges(first.update)), false)
    assert.equal(held.overlaps(ranges(Y.mergeUpdates([first.update, second]))), true)
  })
})
