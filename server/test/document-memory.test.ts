import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import * as Y from 'yjs'
import { eventually } from '../src/contracts/eventually.js'
import { random } from './unit/support/random-histories.js'
import { TestWorld } from './unit/support/test-world.js'

/**
 * What the memory budget charges a loaded document, against the heap it really holds: random
 * mixes of content (text, maps of JSON values, arrays, XML with attributes, nested types,
 * deletions), loaded from a snapshot or written as many edits, measured after a collection. The
 * room keeps its encoding for joiners, as it does once anyone joined since the last change.
 */

setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as () => void

/** The process's heap and buffers after full collections. */
function heldNow(): number {
  for (let i = 0; i < 4; i++) collect()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}

type Pick = (n: number) => number

const WORDS = ['lorem ', 'ipsum', 'dolor sit ', 'amet, ', 'ü', '中文字 ', 'x', '\n']

/** A random JSON value: objects, arrays, integers, floats, strings, booleans, null; sometimes a big array. */
function json(pick: Pick, depth = 0): unknown {
  switch (pick(depth > 2 ? 5 : 8)) {
    case 0:
      return pick(1_000_000)
    case 1:
      return pick(1000) + 0.25
    case 2:
      return WORDS[pick(WORDS.length)]?.repeat(1 + pick(4))
    case 3:
      return pick(2) === 0
    case 4:
      return null
    case 5: {
      const entries = 1 + pick(8)
      return Object.fromEntries(Array.from({ length: entries }, (_, i) => [`k${i}`, json(pick, depth + 1)]))
    }
    case 6:
      return Array.from({ length: pick(10) }, () => json(pick, depth + 1))
    default: {
      // A table: many small values of one kind (the content the encoding undercounts most).
      const length = 100 + pick(5_000)
      const row = pick(3)
      return Array.from({ length }, (_, i) => (row === 0 ? {} : row === 1 ? [i] : { id: i, done: false }))
    }
  }
}

/** One random edit of a kind `weights` favours. */
function edit(doc: Y.Doc, pick: Pick, weights: number[]): void {
  let roll = pick(weights.reduce((a, b) => a + b, 0))
  let kind = 0
  while (roll >= (weights[kind] as number)) roll -= weights[kind++] as number
  const text = doc.getText('text')
  const map = doc.getMap('map')
  const list = doc.getArray('list')
  const xml = doc.getXmlFragment('xml')
  switch (kind) {
    case 0:
      if (text.length > 100 && pick(4) === 0) text.delete(pick(text.length - 50), 1 + pick(50))
      else text.insert(pick(text.length + 1), (WORDS[pick(WORDS.length)] as string).repeat(1 + pick(40)))
      return
    case 1:
      if (map.size > 0 && pick(5) === 0) map.delete(`key${pick(200)}`)
      else map.set(`key${pick(200)}`, json(pick))
      return
    case 2:
      if (list.length > 10 && pick(4) === 0) list.delete(pick(list.length - 5), 1 + pick(5))
      else
        list.insert(
          pick(list.length + 1),
          Array.from({ length: 1 + pick(20) }, () => json(pick, 2)),
        )
      return
    case 3: {
      const element = new Y.XmlElement(pick(2) === 0 ? 'p' : 'li')
      for (let a = pick(4); a > 0; a--) element.setAttribute(`data-${a}`, `value ${pick(1000)}`)
      element.insert(0, [new Y.XmlText((WORDS[pick(WORDS.length)] as string).repeat(1 + pick(5)))])
      xml.insert(pick(xml.length + 1), [element])
      return
    }
    default: {
      const nested = new Y.Map<unknown>()
      map.set(`nested${pick(2_000)}`, nested)
      for (let i = pick(6); i > 0; i--) nested.set(`f${i}`, json(pick, 2))
      if (pick(3) === 0) nested.set('items', Y.Array.from([pick(100), 'x', { a: 1 }]))
    }
  }
}

/** A random mix, as the updates that wrote it: which kinds of content it favours depends on `seed`. */
function randomMix(seed: number): Uint8Array[] {
  const pick = random(seed)
  const weights = Array.from({ length: 5 }, () => pick(10))
  weights[pick(5)] = 10 + pick(20) // one kind at least
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  while (updates.reduce((sum, update) => sum + update.length, 0) < 600_000) edit(doc, pick, weights)
  doc.destroy()
  return updates
}

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]

describe('what a loaded document is charged', () => {
  const world = new TestWorld()
  // Unloaded as soon as released, so one room's unloading never overlaps the next one's measurement.
  const server = world.server({
    options: { maxDocumentBytes: 256 << 20, maxDocumentStructs: 10_000_000, roomGraceMs: 0 },
  })
  after(() => world.close())

  /** Charged over held, for a room built by `build` (given the room), once it is built and encoded. */
  async function chargedOverHeld(
    name: string,
    build: (write: (update: Uint8Array) => Promise<void>) => Promise<void>,
  ) {
    const before = heldNow()
    const hold = await server.manager.acquire(name)
    await build(async (update) => {
      await hold.room.applyUpdate(update, { kind: 'rest' })
    })
    // Saved, so the journal (in this process here) holds none of it: only the room does.
    await server.manager.save(name)
    hold.room.encodeState()
    const held = heldNow() - before
    const charged = hold.room.heldBytes
    hold.release()
    await eventually(() => server.manager.loadedRoom(name) === undefined, 'the room unloads')
    return { ratio: charged / held, held, charged }
  }

  for (const seed of SEEDS) {
    it(`stays within 0.5–2 × the heap of random mix ${seed}, loaded or written as edits`, async () => {
      const updates = randomMix(seed)
      const state = Y.mergeUpdates(updates)
      await world.snapshots.save(`loaded-${seed}`, state, null)
      const loaded = await chargedOverHeld(`loaded-${seed}`, async () => {})
      const written = await chargedOverHeld(`written-${seed}`, async (write) => {
        for (const update of updates) await write(update)
      })
      for (const [how, { ratio, held, charged }] of Object.entries({ loaded, written })) {
        assert.ok(
          ratio >= 0.5 && ratio <= 2,
          `${how}: charged ${charged} bytes for ${held} held (${ratio.toFixed(2)} ×)`,
        )
      }
      assert.ok(updates.length > 0 && state.length > 0)
    })
  }
})
