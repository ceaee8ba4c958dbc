import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { documentContent, SHAPES } from '../src/virtual-users/records.js'
import { framingFor, readFrame, SYNC_STEP1, syncStep1 } from '../src/virtual-users/wire.js'

describe('comparing replicas', () => {
  it('finds equal two replicas whose records list their fields in another order (as yrs hands them back)', () => {
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    a.getMap(SHAPES).set('user-1', { u: 1, s: 2, t: 3.5, x: 4, y: 5 })
    b.getMap(SHAPES).set('user-1', { y: 5, x: 4, t: 3.5, s: 2, u: 1 })
    assert.equal(documentContent(a), documentContent(b))
    b.getMap(SHAPES).set('user-1', { y: 5, x: 4, t: 3.5, s: 3, u: 1 })
    assert.notEqual(documentContent(a), documentContent(b))
  })
})

describe("Hocuspocus's framing", () => {
  it('leads every message with the room name, greets with an Auth message, and reads its sync reply as sync', () => {
    const framing = framingFor('hocuspocus', 'café/1')
    const [greeting] = framing.greeting
    assert.ok(greeting)
    const step1 = syncStep1(new Uint8Array([0]))
    const wrapped = framing.wrap(step1)
    assert.deepEqual(framing.unwrap(wrapped), step1)
    // Its sync reply (type 4) reads as a sync message.
    const reply = framing.wrap(new Uint8Array([4, SYNC_STEP1, 1, 0]))
    const frame = readFrame(framing.unwrap(reply))
    assert.equal(frame.type, 'sync')
    // The greeting: the room's name, then Auth (2) with a token (0) that is empty.
    const decoder = decoding.createDecoder(greeting)
    assert.equal(decoding.readVarString(decoder), 'café/1')
    assert.deepEqual([...greeting.subarray(decoder.pos)], [2, 0, 0])
  })

  it('leaves y-websocket frames as they are', () => {
    const framing = framingFor('y-websocket', 'room')
    const message = syncStep1(new Uint8Array([0]))
    assert.equal(framing.wrap(message), message)
    assert.deepEqual(framing.greeting, [])
  })
})
