import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { encodeUpdate } from '../../src/protocol/codec.js'
import { AUTHORS_ROOT } from '../../src/protocol/update-scan.js'
import { eventually } from '../helpers/clients.js'
import { TestWorld } from './support/test-world.js'
import { until } from './support/turns.js'

let world: TestWorld
const MAX_DOCUMENT_BYTES = 64 * 1024
/** The longest subject a token may have (`MAX_SUBJECT_CHARS`). */
const LONG_SUBJECT = 's'.repeat(255)

/** One update that writes `text` under each of `count` fresh client ids. */
function underFreshIds(count: number, firstId: number, text = 'a'): Uint8Array {
  const updates = Array.from({ length: count }, (_, i) => {
    const doc = new Y.Doc()
    doc.clientID = firstId + i
    doc.getText('t').insert(0, text)
    return Y.encodeStateAsUpdate(doc)
  })
  return Y.mergeUpdates(updates)
}

describe('author bindings count against the document ceiling', () => {
  afterEach(() => world.close())

  it('refuses (4004), before binding anything, a write whose bindings would pass MAX_DOCUMENT_BYTES', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server({ options: { bindAuthors: true, maxDocumentBytes: MAX_DOCUMENT_BYTES } })
    const writer = server.connect(room, { userId: LONG_SUBJECT })
    await writer.ready
    const update = underFreshIds(300, 1_000) // about 3 KB, binding 300 ids to a 255-character subject
    assert.ok(update.length < MAX_DOCUMENT_BYTES / 8)
    writer.send(encodeUpdate(update))
    await until(() => writer.closeCode !== null, 'closed')
    assert.equal(writer.closeCode, CloseCode.DocumentTooLarge)
    const doc = server.manager.loadedRoom(room)?.doc
    assert.equal(doc?.getMap(AUTHORS_ROOT).size, 0, 'nothing bound')
    assert.equal(doc?.getText('t').length, 0, 'nothing applied')
  })

  it('binds a write whose bindings fit, and the document stays within the ceiling', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const server = world.server({ options: { bindAuthors: true, maxDocumentBytes: MAX_DOCUMENT_BYTES } })
    const writer = server.connect(room, { userId: LONG_SUBJECT })
    await writer.ready
    const update = underFreshIds(100, 5_000)
    writer.send(encodeUpdate(update))
    const loaded = () => server.manager.loadedRoom(room)
    await until(() => loaded()?.doc.getText('t').length === 100, 'applied')
    assert.equal(loaded()?.doc.getMap(AUTHORS_ROOT).size, 100)
    const state = Y.encodeStateAsUpdate(loaded()?.doc as Y.Doc)
    assert.ok(state.length <= MAX_DOCUMENT_BYTES, `${state.length} bytes`)
    // What the bindings took is within what was counted for them (`sizeOfBinding`).
    const withoutBindings = new Y.Doc()
    Y.applyUpdate(withoutBindings, update)
    const bindingBytes = state.length - Y.encodeStateAsUpdate(withoutBindings).length
    const counted = 100 * (48 + LONG_SUBJECT.length + '5000'.length)
    assert.ok(
      bindingBytes > 100 * LONG_SUBJECT.length && bindingBytes <= counted,
      `${bindingBytes} of ${counted}`,
    )
  })

  it('refuses (4004) a big update, applied in slices, whose bindings would pass MAX_DOCUMENT_BYTES', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const maxDocumentBytes = 1024 * 1024
    const server = world.server({ options: { bindAuthors: true, maxDocumentBytes } })
    const writer = server.connect(room, { userId: LONG_SUBJECT })
    await writer.ready
    const update = underFreshIds(2_200, 10_000, 'x'.repeat(200)) // past 256 KiB: checked on the worker, sliced
    assert.ok(update.length > 256 * 1024 && update.length < maxDocumentBytes / 2, `${update.length} bytes`)
    writer.send(encodeUpdate(update))
    await eventually(() => writer.closeCode !== null, 'closed', 20_000) // the worker checks it first
    assert.equal(writer.closeCode, CloseCode.DocumentTooLarge)
    const doc = server.manager.loadedRoom(room)?.doc
    assert.equal(doc?.getMap(AUTHORS_ROOT).size, 0, 'nothing bound')
    assert.equal(doc?.getText('t').length, 0, 'nothing applied')
  })
})
