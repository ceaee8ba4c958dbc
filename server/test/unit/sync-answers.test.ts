import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import type { Message } from '../../src/protocol/codec.js'
import type { TestClient } from './support/test-client.js'
import { TestWorld } from './support/test-world.js'
import { settle } from './support/turns.js'

let world: TestWorld

/** The sync steps 2 the server sent `client`, as the frames themselves (not copies). */
function answers(client: TestClient): Uint8Array[] {
  const messages: Message[] = client.messages()
  return client.received.filter((_, index) => messages[index]?.kind === 'sync-step2')
}

/** A room holding some text, and the server holding it. */
async function roomWithText(text: string) {
  world = new TestWorld()
  const room = uniqueRoom()
  const server = world.server()
  const writer = server.connect(room)
  await writer.ready
  writer.doc.getText('t').insert(0, text)
  await settle()
  return { room, server, writer }
}

describe('sync answers', () => {
  afterEach(() => world.close())

  it('gives the joiners of one room version the same answer, encoded once', async () => {
    const { room, server, writer } = await roomWithText('x'.repeat(100_000))
    const joiners = [server.connect(room), server.connect(room), server.connect(room)]
    await Promise.all(joiners.map((joiner) => joiner.ready))
    await settle()
    const [first, ...others] = joiners.map((joiner) => answers(joiner)[0])
    assert.ok(first && first.length > 100_000, 'the first joiner got the whole room')
    for (const other of others) assert.equal(other, first, 'the very same buffer, not a copy')
    for (const joiner of joiners) assert.equal(joiner.text().length, 100_000)

    // Another version: a new answer, shared again by those who join at it.
    writer.doc.getText('t').insert(0, 'y')
    await settle()
    const late = [server.connect(room), server.connect(room)]
    await Promise.all(late.map((joiner) => joiner.ready))
    await settle()
    const [lateFirst, lateSecond] = late.map((joiner) => answers(joiner)[0])
    assert.notEqual(lateFirst, first)
    assert.equal(lateSecond, lateFirst)
    assert.equal(late[0]?.text().length, 100_001)
  })

  it('shares the answer among clients that ask with the same state vector', async () => {
    const { room, server, writer } = await roomWithText('hello')
    const copy = Y.encodeStateAsUpdate(writer.doc)
    writer.doc.getText('t').insert(5, ' world')
    await settle()
    // Two clients that held the room as it was (an offline copy each), reconnecting together.
    const clients = [0, 1].map(() => {
      const doc = new Y.Doc()
      Y.applyUpdate(doc, copy)
      return server.connect(room, { doc })
    })
    await Promise.all(clients.map((client) => client.ready))
    await settle()
    const [a, b] = clients.map((client) => answers(client)[0])
    assert.ok(a)
    assert.equal(b, a)
    for (const client of clients) assert.equal(client.text(), 'hello world')
  })

  it('answers no sync request while the previous answer is unsent, then the latest once it is sent', async () => {
    const { room, server, writer } = await roomWithText('first')
    const reader = server.connect(room, { access: 'ro' })
    await reader.ready
    await settle()
    assert.equal(answers(reader).length, 1)
    reader.transport.holdSends = true // the peer stops reading
    reader.sendSyncStep1()
    await settle()
    assert.equal(answers(reader).length, 2, 'answered: nothing of it was unsent')
    for (let i = 0; i < 3; i++) reader.sendSyncStep1()
    writer.doc.getText('t').insert(0, 'latest ')
    await settle()
    assert.equal(answers(reader).length, 2, 'no answer queued behind an unsent one')
    reader.transport.release() // it reads again
    await settle()
    assert.equal(answers(reader).length, 3, 'the requests that waited get one answer')
    assert.equal(reader.text(), 'latest first', 'of the room as it is when sent')
  })
})
