import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { Room } from '../../src/core/room.js'
import { silentLogger } from '../../src/logger.js'

const options = {
  maxDocumentBytes: 1 << 20,
  maxDocumentStructs: 1_000_000,
  waiting: { maxPendingBytes: 1 << 20, maxPendingDeleteBytes: 1 << 15, maxClients: 1_000 },
  maxPresenceBytes: 16 * 1024,
}

function roomOf(doc: Y.Doc): Room {
  return new Room({
    name: 'r',
    doc,
    loadedBytes: 0,
    options,
    journal: {
      record() {},
      recordBeforeApplying: () => ({ applied() {}, appended: Promise.resolve(true) }),
      durable: async () => {},
    },
    logger: silentLogger,
    onChange: () => {},
  })
}

function roomWith(text: string): Room {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  return roomOf(doc)
}

function textOf(state: Uint8Array): string {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, state)
  return doc.getText('t').toString()
}

/** An edit made elsewhere, as the REST API writes one. */
async function apiEdit(room: Room, text: string): Promise<void> {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, room.encodeState())
  const before = Y.encodeStateVector(doc)
  doc.getText('t').insert(0, text)
  await room.applyUpdate(Y.encodeStateAsUpdate(doc, before), { kind: 'rest' })
}

describe("a room's encoded state", () => {
  it('is encoded once per version: joiners and snapshots share it until the document changes', async () => {
    const room = roomWith('abc')
    const first = room.encodeState()
    assert.equal(room.encodeState(), first, 'the same bytes, not a second encode')
    await apiEdit(room, 'x')
    const second = room.encodeState()
    assert.notEqual(second, first)
    assert.equal(textOf(second), 'xabc')
    room.destroy()
  })

  it('is garbage collected: content deleted before it was built is not in it', () => {
    // A state that still carries deleted text, as snapshots merged byte-wise used to.
    const old = new Y.Doc({ gc: false })
    old.getText('t').insert(0, 'kept secret')
    old.getText('t').delete(4, 7)
    const doc = new Y.Doc()
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(old))
    const room = roomOf(doc)
    const state = room.encodeState()
    assert.equal(textOf(state), 'kept')
    assert.equal(Buffer.from(state).includes('secret'), false, 'the deleted text is gone')
    room.destroy()
  })
})
