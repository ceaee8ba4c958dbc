import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { PRESENCE_OUTDATED_MS, PresenceTable } from '../../src/core/presence-table.js'
import {
  type AwarenessEntry,
  decodeAwarenessUpdate,
  decodeMessage,
  encodeAwarenessEntries,
} from '../../src/protocol/codec.js'

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

  it('removes a leaving client at its clock, which y-protocols readers accept (a removal wins a tie)', () => {
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
    assert.deepEqual(removed, [{ clientId: 7, clock: 4, state: null }])
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

  it('gives joiners everyone present as one awareness message, shared until the table changes', () => {
    const table = new PresenceTable()
    assert.equal(table.presentFrame(0), null, 'nobody present: nothing to send')
    const big = { name: 'é ✓ 😀', cursor: 'x'.repeat(300) } // multi-byte UTF-8, lengths past one varint byte
    table.apply([entry(1, 2, big), entry(200_000, 1, { b: 1 }), entry(3, 1, { c: 1 })], 0)
    table.apply([entry(3, 1, null)], 0)
    const frame = table.presentFrame(1)
    assert.ok(frame)
    const reader = new Awareness(new Y.Doc())
    const message = decodeMessage(frame)
    assert.equal(message.kind, 'awareness')
    if (message.kind === 'awareness') applyAwarenessUpdate(reader, message.update, null)
    const received = reader.getStates()
    reader.destroy()
    assert.deepEqual(received.get(1), big)
    assert.deepEqual(received.get(200_000), { b: 1 })
    assert.equal(received.has(3), false, 'the removed client is not sent')
    assert.deepEqual(
      new Uint8Array(frame),
      encodeAwarenessEntries(table.present(1)),
      'the same bytes as the entries encoded',
    )
    assert.equal(table.presentFrame(2), frame, 'unchanged: the same buffer')
    table.apply([entry(1, 2, { stale: true })], 3) // refused (older clock): still the same
    assert.equal(table.presentFrame(3), frame)
    table.apply([entry(200_000, 2, { b: 2 })], 4)
    const renewed = table.presentFrame(4)
    assert.notEqual(renewed, frame, 'a renewal makes a new message')
    table.remove([1])
    assert.notEqual(table.presentFrame(5), renewed, 'so does a removal')
    const outdated = table.presentFrame(PRESENCE_OUTDATED_MS + 4)
    assert.equal(outdated, null, 'and a state outdating: the kept message is not sent past it')
  })

  it('stores a copy, not a view into the frame it came in', () => {
    const table = new PresenceTable()
    const update = encoding.encode((e) => {
      encoding.writeVarUint(e, 1)
      encoding.writeVarUint(e, 3)
      encoding.writeVarUint(e, 1)
      encoding.writeVarString(e, '{"x":1}')
    })
    table.apply(decodeAwarenessUpdate(update, 1024))
    update.fill(0)
    assert.deepEqual(states(table.present()), { 3: { x: 1 } })
  })

  it('shows a client that reconnects after its first presence update, as y-protocols peers do', () => {
    const table = new PresenceTable()
    const user = new Awareness(new Y.Doc())
    const peer = new Awareness(new Y.Doc())
    const send = (entries: AwarenessEntry[]) => {
      const message = decodeMessage(encodeAwarenessEntries(entries))
      if (message.kind === 'awareness') applyAwarenessUpdate(peer, message.update, null)
    }
    const fromUser = () => {
      const message = encodeAwarenessUpdate(user, [user.clientID])
      const entries = decodeAwarenessUpdate(message, 1024)
      table.apply(entries)
      send(entries)
    }
    user.setLocalState({ name: 'Ada' })
    fromUser()
    assert.deepEqual(peer.getStates().get(user.clientID), { name: 'Ada' })
    send(table.remove([user.clientID])) // the connection dropped
    assert.equal(peer.getStates().has(user.clientID), false)
    fromUser() // the provider reconnects and resends its state, at the same clock: still gone
    user.setLocalState({ name: 'Ada', cursor: 1 }) // the first update after the reconnect
    fromUser()
    assert.deepEqual(peer.getStates().get(user.clientID), { name: 'Ada', cursor: 1 })
    assert.deepEqual(states(table.present()), { [user.clientID]: { name: 'Ada', cursor: 1 } })
    user.destroy()
    peer.destroy()
  })

  it('forgets clients gone for good, so the table shrinks as they leave', () => {
    const table = new PresenceTable()
    for (let id = 1; id <= 1_000; id++) table.apply([entry(id, 1, { id })], 0)
    table.remove(
      Array.from({ length: 990 }, (_, i) => i + 1),
      0,
    )
    table.apply([entry(991, 2, { id: 991 })], PRESENCE_OUTDATED_MS) // the others stay present
    for (let id = 992; id <= 1_000; id++) table.apply([entry(id, 2, { id })], PRESENCE_OUTDATED_MS)
    assert.equal(table.present(PRESENCE_OUTDATED_MS).length, 10)
    assert.equal(table.tracked, 10, 'the 990 gone clients are forgotten')
    // A room nobody joins (so nobody reads it) is purged as its table grows: under churn of 1,000
    // clients per outdated period it holds about those, never all who ever came.
    let most = 0
    for (let id = 2_000; id < 12_000; id++) {
      const now = 2 * PRESENCE_OUTDATED_MS + (id - 2_000) * (PRESENCE_OUTDATED_MS / 1_000)
      table.apply([entry(id, 1, { id })], now)
      table.remove([id], now)
      most = Math.max(most, table.tracked)
    }
    assert.ok(most <= 2 * 1_000 + 64, `at most ${most} clients tracked under churn`)
  })

  it('refuses presence states that are too big, not UTF-8, or not JSON', () => {
    const update = (state: Uint8Array) =>
      encoding.encode((e) => {
        encoding.writeVarUint(e, 1)
        encoding.writeVarUint(e, 3)
        encoding.writeVarUint(e, 1)
        encoding.writeVarUint8Array(e, state)
      })
    const big = text({ pad: 'x'.repeat(2_000) })
    assert.throws(() => decodeAwarenessUpdate(update(big), 1_024), { code: 'MESSAGE_TOO_BIG' })
    assert.equal(decodeAwarenessUpdate(update(big), 4_096).length, 1)
    const invalidUtf8 = new Uint8Array([0x22, 0xc3, 0x28, 0x22]) // "\xC3(" : a broken sequence in a string
    assert.throws(() => decodeAwarenessUpdate(update(invalidUtf8), 1_024), { code: 'PROTOCOL_ERROR' })
    assert.throws(() => decodeAwarenessUpdate(update(text('ok').subarray(1)), 1_024), {
      code: 'PROTOCOL_ERROR',
    })
    // A peer's update, checked by the server its client sent it to: only its size and shape count.
    assert.equal(decodeAwarenessUpdate(update(invalidUtf8), 1_024, false)[0]?.state?.length, 4)
    assert.throws(() => decodeAwarenessUpdate(update(big), 1_024, false), { code: 'MESSAGE_TOO_BIG' })
  })
})
