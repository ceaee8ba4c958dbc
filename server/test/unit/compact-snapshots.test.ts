import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

const contains = (bytes: Uint8Array | undefined, text: string) => !!bytes && Buffer.from(bytes).includes(text)

/** The encoding of a fresh garbage-collected document holding `doc`'s content and history. */
function freshEncoding(doc: Y.Doc): Uint8Array {
  const fresh = new Y.Doc()
  Y.applyUpdate(fresh, Y.encodeStateAsUpdate(doc))
  return Y.encodeStateAsUpdate(fresh)
}

describe('snapshots hold the document, not its deleted history', () => {
  afterEach(() => world.close())

  it('drops deleted content from storage and from what joiners get, and stays compact over 500 saves', async () => {
    world = new TestWorld()
    const server = world.server()
    const room = uniqueRoom()
    const client = server.connect(room)
    await client.ready
    const text = client.doc.getText('t')
    text.insert(0, 'base '.repeat(4_000)) // a 20 KB document
    const sizes: number[] = []
    for (let cycle = 0; cycle < 500; cycle++) {
      const secret = `secret-${cycle}-`.padEnd(200, '#')
      text.insert(text.length, secret) // the socket pair delivers it to the room at once
      await server.manager.save(room)
      text.delete(text.length - secret.length, secret.length)
      await server.manager.save(room)
      const stored = (await world.snapshots.load(room))?.state
      assert.equal(contains(stored, secret), false, `cycle ${cycle}: the deleted text is not stored`)
      sizes.push(stored?.length ?? 0)
    }
    const reference = freshEncoding(client.doc).length
    const last = sizes.at(-1) ?? 0
    assert.ok(last <= reference * 1.1, `stored ${last} bytes, a fresh GC'ed document ${reference}`)
    assert.ok(last <= (sizes[49] ?? 0) * 1.1, `flat: ${sizes[49]} bytes after 50 saves, ${last} after 500`)

    const joiner = server.connect(room)
    await joiner.ready
    await settle()
    const joined = Buffer.concat(joiner.received)
    assert.equal(joined.includes('secret-'), false, 'no deleted text reaches a joiner')
    assert.ok(joined.includes('base base'), 'the document does')
  })
})
