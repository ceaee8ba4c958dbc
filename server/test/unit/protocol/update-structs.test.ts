import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { MINIMAL_KINDS, minimalUpdate } from '../../../../loadtest/src/bench/minimal-structs.js'
import { DocumentTooLargeError } from '../../../src/errors.js'
import { checkWhole } from '../../../src/protocol/update-guard.js'
import { scanUpdate } from '../../../src/protocol/update-scan.js'
import { checkAndCut } from '../../../src/protocol/update-slices.js'
import { documentStructs, structsAdded } from '../../../src/protocol/update-structs.js'
import { generateHistory } from '../../helpers/real-documents.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const TEST_FILE = 'server/test/unit/protocol/update-structs.test.ts'
const EMPTY = new Y.Doc()
const stateOf = (doc: Y.Doc) => (client: number) => Y.getState(doc.store, client)

/** What applying `update` adds to `doc`'s structs and clients, and what `structsAdded` said it would. */
function addedBy(doc: Y.Doc, update: Uint8Array): { actual: number; counted: number } {
  const counted = structsAdded(scanUpdate(update), stateOf(doc))
  const before = documentStructs(doc)
  Y.applyUpdate(doc, update)
  return { actual: documentStructs(doc) - before, counted }
}

describe('the structs an update adds to a room', () => {
  it('are counted exactly for a real document sent whole to an empty room', () => {
    const { random, replayable } = seededRandom('SYMPHONY_STRUCTS_SEED')
    try {
      const { final } = generateHistory({ random, sessions: 300, editsPerSession: 4 })
      const { actual, counted } = addedBy(new Y.Doc(), Y.encodeStateAsUpdate(final))
      assert.ok(actual > 500, `${actual} structs`)
      assert.equal(counted, actual, 'its references and deletions fall on its own boundaries')
    } catch (error) {
      throw replayable(error, TEST_FILE)
    }
  })

  it('are never counted short for real updates, one by one or merged, as they were made', () => {
    const { random, replayable } = seededRandom('SYMPHONY_STRUCTS_SEED')
    try {
      const { updates } = generateHistory({ random, sessions: 150, editsPerSession: 4 })
      const room = new Y.Doc()
      for (let i = 0; i < updates.length; ) {
        const take = random() < 0.3 ? 2 + Math.floor(random() * 6) : 1
        const batch = updates.slice(i, i + take)
        i += take
        const { actual, counted } = addedBy(
          room,
          batch.length === 1 ? (batch[0] as Uint8Array) : Y.mergeUpdates(batch),
        )
        assert.ok(actual <= counted, `added ${actual} structs, counted ${counted}`)
      }
    } catch (error) {
      throw replayable(error, TEST_FILE)
    }
  })

  it('are counted for minimal structs, including the items a deletion cuts', () => {
    for (const kind of MINIMAL_KINDS) {
      const { actual, counted } = addedBy(new Y.Doc(), minimalUpdate(kind, { structs: 20_000 }))
      assert.ok(actual >= 20_000, `${kind}: ${actual} structs`)
      assert.ok(actual <= counted && counted <= actual + 2, `${kind}: added ${actual}, counted ${counted}`)
    }
  })

  it('count each position a deletion cuts in what the room holds', () => {
    const source = new Y.Doc()
    const text = source.getText('t')
    text.insert(0, 'x'.repeat(2_000))
    const room = new Y.Doc()
    Y.applyUpdate(room, Y.encodeStateAsUpdate(source))
    const before = Y.encodeStateVector(source)
    for (let i = 0; i < 500; i++) text.delete(i * 3, 1) // one character in four, from the first: 500 ranges
    const { actual, counted } = addedBy(room, Y.encodeStateAsUpdate(source, before))
    assert.equal(actual, 999, 'the one item becomes 1,000: each deleted character, and the text after each')
    assert.equal(counted, actual)
  })
})

describe('an update of more structs than the document may gain', () => {
  it('is refused by the scan as it counts them (4004), at one struct past the limit', () => {
    const update = minimalUpdate('gc-item', { structs: 10_001 }) // and one client, counted as 8
    assert.throws(() => scanUpdate(update, { maxStructs: 10_008 }), DocumentTooLargeError)
    assert.equal(scanUpdate(update, { maxStructs: 10_009 }).structs.size, 1)
    const clients = minimalUpdate('client-per-struct', { structs: 5_000 }) // a client each
    assert.throws(() => scanUpdate(clients, { maxStructs: 44_999 }), DocumentTooLargeError)
    assert.doesNotThrow(() => scanUpdate(clients, { maxStructs: 45_000 }))
  })

  it('is refused by the check of a big update when the cuts it makes pass the limit', () => {
    const update = minimalUpdate('split-deletes', { structs: 10_000 }) // one string, cut 10,000 times
    const scanned = scanUpdate(update, { maxStructs: 9_000 })
    assert.throws(() => checkWhole(scanned, stateOf(EMPTY), 9_000), DocumentTooLargeError)
    const { structs } = checkWhole(scanned, stateOf(EMPTY), 10_008)
    assert.equal(structs, 10_008, 'the string, its client (8) and 9,999 cuts')
    const state = Y.encodeStateVector(EMPTY)
    assert.throws(() => checkAndCut(update, state, 9_000, 250), DocumentTooLargeError)
  })
})

describe('slices of a big update', () => {
  it('hold a run of garbage-collected structs as one struct, as Yjs would merge them', () => {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, 1) // one client
    encoding.writeVarUint(encoder, 100_000) // of 100,000 structs from clock 0
    encoding.writeVarUint(encoder, 1)
    encoding.writeVarUint(encoder, 0)
    for (let i = 0; i < 100_000; i++) {
      encoding.writeUint8(encoder, 0) // a GC struct of one clock
      encoding.writeVarUint(encoder, 1)
    }
    encoding.writeVarUint(encoder, 0) // no deletions
    const update = encoding.toUint8Array(encoder)
    const { slices, structs } = checkAndCut(update, Y.encodeStateVector(EMPTY), 20, 250)
    assert.equal(structs, 9, 'one struct and its client (8)')
    assert.equal(slices.length, 1)
    const [gc] = Y.decodeUpdate(slices[0] as Uint8Array).structs
    assert.equal(Y.decodeUpdate(slices[0] as Uint8Array).structs.length, 1)
    assert.equal(gc?.length, 100_000)
    const doc = new Y.Doc()
    Y.applyUpdate(doc, slices[0] as Uint8Array)
    assert.deepEqual(Y.encodeStateVector(doc), Y.encodeStateVectorFromUpdate(update))
  })
})
