import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import { Awareness, applyAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { PRESENCE_OUTDATED_MS, PresenceTable } from '../src/core/presence-table.js'
import {
  type AwarenessEntry,
  decodeAwarenessUpdate,
  decodeMessage,
  encodeAwarenessEntries,
} from '../src/protocol/codec.js'

const text = (state: unknown) => new TextEncoder().encode(JSON.stringify(state))
const entry = (clientId: number, clock: number, state: unknown): AwarenessEntry => ({
  clientId,
  clock,
  state: state === null ? null : text(state),
})
const states = (entries: AwarenessEntry[]) =>
  Object.fromEntries(
    entries.map((e) => [e.clientId, e.state && JSON.parse(new TextDecoder().decode(e.state))]),
  )

describe('presence table', () => {
  it('keeps the latest state per client: a higher clock wins, a removal wins a tie', () => {
    const table = new PresenceTable()
    table.apply([entry(1, 2, { x: 2 }), entry(2, 1, { x: 9 })])
    table.apply([entry(1, 1, { x: 1 })]) // older: ignored
    table.apply([entry(1, 2, { x: 3 })]) // same clock, not a removal: ignored
    assert.deepEqual(states(table.present()), { 1: { x: 2 }, 2: { x: 9 } })
    table.apply([entry(2, 1, null)])
    assert.deepEqual(states(table.present()), { 1: { x: 2 } })
    table.apply([entry(2, 1, { x: 10 })]) // the removal's clock still refuses older states
    assert.equal(table.size, 1)
  })

  it('removes a leaving client with the next clock, which y-protocols readers accept', () => {
    const table = new PresenceTable()
    table.apply([entry(7, 4, { cursor: 1 })])
    const reader = new Awareness(new Y.Doc())
    const frame = (entries: AwarenessEntry[]) => {
      const message = decodeMessage(encodeAwarenessEntries(entries))
      assert.equal(message.kind, 'awareness')
      return message.kind === 'awareness' ? message.update : new Uint8Array()
    }
    applyAwarenessUpdate(reader, frame(table.present()), null)
    assert.deepEqual(reader.getStates().get(7), { cursor: 1 })
    const removed = table.remove([7, 8])
    assert.deepEqual(removed, [{ clientId: 7, clock: 5, state: null }])
    applyAwarenessUpdate(reader, frame(removed), null)
    assert.equal(reader.getStates().has(7), false)
    assert.deepEqual(table.remove([7]), [], 'already gone')
    reader.destroy()
  })

  it(`drops a state not renewed for ${PRESENCE_OUTDATED_MS / 1000} s`, () => {
    const table = new PresenceTable()
    table.apply([entry(1, 1, { a: 1 })], 0)
    table.apply([entry(2, 1, { b: 1 })], PRESENCE_OUTDATED_MS / 2)
    assert.deepEqual(states(table.present(PRESENCE_OUTDATED_MS)), { 2: { b: 1 } })
    table.apply([entry(1, 2, { a: 2 })], PRESENCE_OUTDATED_MS) // it came back: renewed
    assert.deepEqual(states(table.present(PRESENCE_OUTDATED_MS + 1)), { 1: { a: 2 }, 2: { b: 1 } })
  })

  it('stores a copy, not a view into the frame it came in', () => {
    const table = new PresenceTable()
    const update = encoding.encode((e) => {
      encoding.writeVarUint(e, 1)
      encoding.writeVarUint(e, 3)
      encoding.writeVarUint(e, 1)
      encoding.writeVarString(e, '{"x":1}')
    })
    table.apply(decodeAwarenessUpdate(update))
    update.fill(0)
    assert.deepEqual(states(table.present()), { 3: { x: 1 } })
  })
})
