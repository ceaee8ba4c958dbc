import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MESSAGE_BROADCAST } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as syncProtocol from 'y-protocols/sync'
import * as Y from 'yjs'
import { ProtocolError } from '../../../src/errors.js'
import {
  decodeMessage,
  encodeAwareness,
  encodePermissionDenied,
  encodeRelayedEvent,
  encodeSyncStatus,
  encodeSyncStep1,
  encodeSyncStep2,
  encodeUpdate,
  isEmptyUpdate,
} from '../../../src/protocol/codec.js'

/** Frames as y-protocols (what every y-websocket client uses) encodes them. */
function referenceFrame(write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  write(encoder)
  return encoding.toUint8Array(encoder)
}

function docWithText(text: string): Y.Doc {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  return doc
}

describe('codec', () => {
  it('decodes sync step 1 as y-protocols writes it, with a view of the state vector', () => {
    const doc = docWithText('abc')
    const frame = referenceFrame((e) => {
      encoding.writeVarUint(e, 0)
      syncProtocol.writeSyncStep1(e, doc)
    })
    const message = decodeMessage(frame)
    assert.equal(message.kind, 'sync-step1')
    assert.deepEqual(message.kind === 'sync-step1' && [...message.stateVector], [...Y.encodeStateVector(doc)])
    assert.equal(message.kind === 'sync-step1' && message.stateVector.buffer, frame.buffer, 'no copy')
  })

  it('decodes sync step 2 and update payloads that apply to a document', () => {
    const source = docWithText('hello')
    const update = Y.encodeStateAsUpdate(source)
    for (const [frame, kind] of [
      [encodeSyncStep2(update), 'sync-step2'],
      [encodeUpdate(update), 'update'],
    ] as const) {
      const message = decodeMessage(frame)
      assert.equal(message.kind, kind)
      const target = new Y.Doc()
      Y.applyUpdate(target, (message as { update: Uint8Array }).update)
      assert.equal(target.getText('t').toString(), 'hello')
    }
  })

  it('encodes frames that y-protocols reads back', () => {
    const doc = docWithText('x')
    const target = new Y.Doc()
    const frame = encodeSyncStep2(Y.encodeStateAsUpdate(doc))
    const decoder = { arr: frame, pos: 1 } // skip the message type byte
    syncProtocol.readSyncMessage(decoder as never, encoding.createEncoder(), target, null)
    assert.equal(target.getText('t').toString(), 'x')
    assert.deepEqual(decodeMessage(encodeSyncStep1(new Uint8Array([0]))), {
      kind: 'sync-step1',
      stateVector: new Uint8Array([0]),
    })
  })

  it('decodes awareness, query-awareness and auth frames', () => {
    const doc = new Y.Doc()
    const awareness = new awarenessProtocol.Awareness(doc)
    awareness.setLocalState({ user: 'a' })
    const update = awarenessProtocol.encodeAwarenessUpdate(awareness, [doc.clientID])
    const message = decodeMessage(encodeAwareness(update))
    assert.equal(message.kind, 'awareness')
    assert.deepEqual(message.kind === 'awareness' && [...message.update], [...update])
    assert.deepEqual(decodeMessage(new Uint8Array([3])), { kind: 'query-awareness' })
    assert.deepEqual(decodeMessage(encodePermissionDenied('no')), { kind: 'auth' })
    awareness.destroy()
  })

  it('rejects malformed frames with ProtocolError', () => {
    const bad = [
      new Uint8Array([]), // empty
      new Uint8Array([9]), // unknown type
      new Uint8Array([0, 7, 0]), // unknown sync type
      new Uint8Array([0, 2, 50, 1, 2]), // length past the end
      new Uint8Array([0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // runaway varint
      new Uint8Array([1]), // awareness without payload
      new Uint8Array([3, 0]), // trailing byte
    ]
    for (const frame of bad) assert.throws(() => decodeMessage(frame), ProtocolError, `frame ${[...frame]}`)
  })

  it('recognises the empty update', () => {
    assert.equal(isEmptyUpdate(Y.encodeStateAsUpdate(new Y.Doc())), true)
    assert.equal(isEmptyUpdate(Y.encodeStateAsUpdate(docWithText('a'))), false)
  })

  it('decodes a sync-status request as a view of its payload and refuses one past the cap', () => {
    const message = decodeMessage(encodeSyncStatus(new Uint8Array([1, 2, 3])))
    assert.deepEqual(message.kind === 'sync-status' && [...message.payload], [1, 2, 3])
    assert.deepEqual(decodeMessage(encodeSyncStatus(new Uint8Array(0))), {
      kind: 'sync-status',
      payload: new Uint8Array(0),
    })
    assert.throws(() => decodeMessage(encodeSyncStatus(new Uint8Array(17))), ProtocolError)
  })

  it('reads the sender of a relayed event only from a peer, and requires it there', () => {
    const payload = new TextEncoder().encode('{"type":"cheer"}')
    const sender = { connectionId: 'a:1f2e3d4c:7', userId: 'u-ada', name: null }
    const relayed = encodeRelayedEvent(payload, sender)
    const message = decodeMessage(relayed, 'peer')
    assert.deepEqual(message.kind === 'broadcast' && [...message.payload], [...payload])
    assert.throws(() => decodeMessage(relayed), ProtocolError, 'a client cannot send a sender')
    const bare = referenceFrame((e) => {
      encoding.writeVarUint(e, MESSAGE_BROADCAST)
      encoding.writeVarUint8Array(e, payload)
    })
    assert.equal(decodeMessage(bare).kind, 'broadcast')
    assert.throws(() => decodeMessage(bare, 'peer'), ProtocolError, 'a peer must name one')
    const badSender = referenceFrame((e) => {
      encoding.writeVarUint(e, MESSAGE_BROADCAST)
      encoding.writeVarUint8Array(e, payload)
      encoding.writeVarString(e, '{"userId":1}')
    })
    assert.throws(() => decodeMessage(badSender, 'peer'), ProtocolError)
  })
})
