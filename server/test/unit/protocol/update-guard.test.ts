import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { parseConfig } from '../../../src/config.js'
import { checkUpdate } from '../../../src/protocol/update-guard.js'
import { scanUpdate } from '../../../src/protocol/update-scan.js'
import { waitingStructs } from '../../../src/protocol/yjs-internals.js'
import { craft } from '../../helpers/crafted-updates.js'
import { contentOf, generateHistory, shuffled } from '../../helpers/real-documents.js'
import { seededRandom } from '../../helpers/seeded-random.js'

const TEST_FILE = 'server/test/unit/protocol/update-guard.test.ts'
/** The limits a server runs with when nothing is configured: what real documents must pass. */
const DEFAULT_LIMITS = parseConfig({ AUTH: 'none' }).limits
const DEFAULT_BUDGET = {
  maxPendingBytes: DEFAULT_LIMITS.maxPendingBytes,
  maxPendingDeleteBytes: DEFAULT_LIMITS.maxPendingDeleteBytes,
  maxClients: 1_000,
}
const BUDGET = { maxPendingBytes: 64 * 1024, maxPendingDeleteBytes: 32 * 1024, maxClients: 1_000 }
const refusedAs = (code: string) => (error: unknown) => (error as { code?: string }).code === code

/** Structs that wait for another client's first item, and the update that brings it. */
function dependent(bytes: number): { release: Uint8Array; waiting: Uint8Array } {
  const other = new Y.Doc()
  other.getText('t').insert(0, 'w')
  const release = Y.encodeStateAsUpdate(other)
  const writer = new Y.Doc()
  Y.applyUpdate(writer, release)
  const before = Y.encodeStateVector(writer)
  writer.getText('t').insert(1, 'z'.repeat(bytes))
  return { release, waiting: Y.encodeStateAsUpdate(writer, before) }
}

describe('the update scanner and guard read real updates as Yjs does', () => {
  it('reads every update as Yjs does: the same ids and lengths', () => {
    const { random } = seededRandom('SYMPHONY_GUARD_SEED')
    const { updates } = generateHistory({ random, sessions: 60, editsPerSession: 4 })
    for (const update of [...updates, Y.mergeUpdates(updates)]) {
      const scanned = scanUpdate(update)
      const decoded = Y.decodeUpdate(update)
      const theirs = decoded.structs.map((s) => `${s.id.client}:${s.id.clock}+${s.length}`)
      const ours = [...scanned.structs].flatMap(([client, run]) =>
        run.map((s) => `${client}:${s.clock}+${s.length}`),
      )
      assert.deepEqual(ours, theirs)
    }
  })

  it('lets a document written by hundreds of sessions into an empty room, whole or in any order', () => {
    const seeded = seededRandom('SYMPHONY_GUARD_SEED')
    try {
      const { updates, final, clients } = generateHistory({
        random: seeded.random,
        sessions: 400,
        editsPerSession: 3,
      })
      assert.ok(clients >= 400)
      const whole = new Y.Doc()
      checkUpdate(Y.encodeStateAsUpdate(final), whole, DEFAULT_BUDGET)
      const inOrder = new Y.Doc()
      for (const update of shuffled(updates, seeded.random)) {
        checkUpdate(update, inOrder, DEFAULT_BUDGET)
        Y.applyUpdate(inOrder, update)
      }
      assert.deepEqual(contentOf(inOrder), contentOf(final))
    } catch (error) {
      throw seeded.replayable(error, TEST_FILE)
    }
  })
})

describe('the update guard reads crafted updates as Yjs does', () => {
  it('refuses a client that appears twice (Yjs keeps only its last group)', () => {
    const update = craft.update((e) => {
      encoding.writeVarUint(e, 2)
      craft.group(e, 1, 5, 0)
      craft.item(e, 'a')
      craft.group(e, 1, 5, 1)
      craft.item(e, 'b', [5, 0])
      encoding.writeVarUint(e, 0)
    })
    assert.throws(() => checkUpdate(update, new Y.Doc(), BUDGET), refusedAs('PROTOCOL_ERROR'))
  })

  it('counts a struct the room holds as waiting when it refers to an id that does not exist', () => {
    const doc = new Y.Doc()
    doc.clientID = 7
    doc.getText('t').insert(0, 'hello')
    const resent = craft.update((e) => {
      encoding.writeVarUint(e, 1)
      craft.group(e, 1, 7, 0)
      craft.item(e, 'hhh', [99, 1_000_000])
      encoding.writeVarUint(e, 0)
    })
    assert.throws(
      () => checkUpdate(resent, doc, { ...BUDGET, maxPendingBytes: 0 }),
      refusedAs('PENDING_LIMIT'),
    )
    Y.applyUpdate(doc, resent)
    assert.ok(doc.store.pendingStructs, 'Yjs does hold it waiting')
  })

  it('counts waiting deletions at their encoded size', () => {
    const update = craft.update((e) => {
      encoding.writeVarUint(e, 0) // no structs
      encoding.writeVarUint(e, 1)
      encoding.writeVarUint(e, 2 ** 40) // a client id of 6 bytes
      encoding.writeVarUint(e, 8_000)
      for (let i = 0; i < 8_000; i++) {
        encoding.writeVarUint(e, 2 ** 40 + 2 * i) // clocks of 6 bytes
        encoding.writeVarUint(e, 1)
      }
    })
    assert.throws(() => checkUpdate(update, new Y.Doc(), BUDGET), refusedAs('PENDING_LIMIT'))
  })

  it('refuses an object key named __proto__ (lib0 would set a prototype, not a key)', () => {
    const update = craft.update((e) => {
      encoding.writeVarUint(e, 1)
      craft.group(e, 1, 5, 0)
      encoding.writeUint8(e, 8 | 0x20) // ContentAny, with a parentSub (a map key)
      encoding.writeVarUint(e, 1)
      encoding.writeVarString(e, 'm')
      encoding.writeVarString(e, 'key')
      encoding.writeVarUint(e, 1) // one value
      encoding.writeUint8(e, 118) // an object
      encoding.writeVarUint(e, 1)
      encoding.writeVarString(e, '__proto__')
      encoding.writeUint8(e, 120) // true
      encoding.writeVarUint(e, 0)
    })
    assert.throws(() => checkUpdate(update, new Y.Doc(), BUDGET), refusedAs('PROTOCOL_ERROR'))
  })

  it('accepts an update that releases what the room holds waiting, even with the budget full', () => {
    const doc = new Y.Doc()
    const writer = new Y.Doc()
    writer.getText('t').insert(0, 'a')
    const firstHalf = Y.encodeStateAsUpdate(writer)
    writer.getText('t').insert(1, 'b'.repeat(40 * 1024))
    const secondHalf = Y.encodeStateAsUpdate(writer, Y.encodeStateVectorFromUpdate(firstHalf))
    checkUpdate(secondHalf, doc, BUDGET)
    Y.applyUpdate(doc, secondHalf)
    const other = new Y.Doc()
    other.getText('t').insert(0, 'c')
    const before = Y.encodeStateVector(other)
    other.getText('t').insert(1, 'd'.repeat(30 * 1024))
    const othersSecondHalf = Y.encodeStateAsUpdate(other, before)
    const both = Y.mergeUpdates([firstHalf, othersSecondHalf])
    checkUpdate(both, doc, BUDGET) // 40 KiB held + 30 KiB new would pass 64 KiB, but the 40 are released
    Y.applyUpdate(doc, both)
    assert.equal(doc.getText('t').length, 1 + 40 * 1024)
  })
})

describe('the update guard charges what stays waiting', () => {
  it('charges an update that releases some waiting structs for those that stay waiting', () => {
    const doc = new Y.Doc()
    const [a, b, c, small] = [dependent(30_000), dependent(30_000), dependent(40_000), dependent(20_000)]
    for (const { waiting } of [a, b]) {
      checkUpdate(waiting, doc, BUDGET)
      Y.applyUpdate(doc, waiting)
    }
    // a's wait ends, b's does not: b (30 KB) and c (40 KB) would wait, past 64 KiB.
    assert.throws(
      () => checkUpdate(Y.mergeUpdates([a.release, c.waiting]), doc, BUDGET),
      refusedAs('PENDING_LIMIT'),
    )
    const fits = Y.mergeUpdates([a.release, small.waiting])
    checkUpdate(fits, doc, BUDGET) // b and the small one: 50 KB
    Y.applyUpdate(doc, fits)
    assert.ok((waitingStructs(doc)?.update.length ?? 0) < BUDGET.maxPendingBytes)
  })
})
