import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemoryPubSub } from '../src/adapters/memory-pubsub.js'
import { Room } from '../src/core/room.js'
import { silentLogger } from '../src/logger.js'
import { encodeUpdate } from '../src/protocol/codec.js'

function roomWith(text: string): Room {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  const options = { maxDocumentBytes: 1 << 20, antiEntropyIntervalMs: 0 }
  return new Room('r', doc, 0, new MemoryPubSub('s'), { record() {} }, options, silentLogger, () => {})
}

function textOf(state: Uint8Array): string {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, state)
  return doc.getText('t').toString()
}

/** An edit made elsewhere, arriving as a peer server publishes it. */
function remoteEdit(room: Room, text: string): void {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, room.encodeState())
  const before = Y.encodeStateVector(doc)
  doc.getText('t').insert(0, text)
  room.receiveRemote(encodeUpdate(Y.encodeStateAsUpdate(doc, before)))
}

describe("a room's encoded state", () => {
  it('is encoded once per version: joiners and snapshots share it until the document changes', () => {
    const room = roomWith('abc')
    const first = room.encodeState()
    assert.equal(room.encodeState(), first, 'the same bytes, not a second encode')
    remoteEdit(room, 'x')
    const second = room.encodeState()
    assert.notEqual(second, first)
    assert.equal(textOf(second), 'xabc')
    room.destroy()
  })

  it('is the loaded bytes themselves while nothing has changed since the load', () => {
    const room = roomWith('loaded')
    const stored = Y.encodeStateAsUpdate(room.doc)
    room.adoptLoadedState(stored)
    assert.equal(room.encodeState(), stored)
    remoteEdit(room, '!')
    assert.equal(textOf(room.encodeState()), '!loaded')
    room.adoptLoadedState(stored) // too late: the document has moved on
    assert.equal(textOf(room.encodeState()), '!loaded')
    room.destroy()
  })
})
