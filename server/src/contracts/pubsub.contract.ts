import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { PubSub } from '../ports/pubsub.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

export interface PubSubPair {
  /** Two servers' adapters sharing one backend. */
  a: PubSub
  b: PubSub
  cleanup(): Promise<void>
}

/** Receives messages and lets a test wait for a given count. */
function inbox() {
  const messages: Uint8Array[] = []
  let waiter: (() => void) | null = null
  return {
    messages,
    handler: (message: Uint8Array) => {
      messages.push(message)
      waiter?.()
    },
    async waitFor(count: number) {
      const deadline = Date.now() + 5_000
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`only ${messages.length} of ${count} messages arrived`)
        await new Promise<void>((resolve) => {
          waiter = resolve
          setTimeout(resolve, 50)
        })
      }
    },
  }
}

const bytes = (...values: number[]) => new Uint8Array(values)

/** Resolves once `condition` holds; fails after 5 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** What every `PubSub` adapter must do. */
export function pubSubContract(name: string, createPair: () => Promise<PubSubPair>): void {
  describe(`PubSub contract: ${name}`, () => {
    let pair: PubSubPair
    before(async () => {
      pair = await createPair()
    })
    after(() => pair.cleanup())

    it('keeps every room name apart: slashes, case, dots, long and non-ASCII names', async () => {
      const inboxes = TRICKY_ROOM_NAMES.map(() => inbox())
      await Promise.all(
        TRICKY_ROOM_NAMES.map((room, i) => pair.b.subscribe(room, (inboxes[i] ?? inbox()).handler)),
      )
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) pair.a.publish(room, bytes(i))
      for (const [i, box] of inboxes.entries()) {
        await box.waitFor(1)
        assert.deepEqual(
          box.messages.map((m) => [...m]),
          [[i]],
          TRICKY_ROOM_NAMES[i],
        )
      }
      await Promise.all(TRICKY_ROOM_NAMES.map((room) => pair.b.unsubscribe(room)))
    })

    it("delivers another server's messages byte for byte, in order, and never the server's own", async () => {
      const room = uniqueRoom('ps')
      const atA = inbox()
      const atB = inbox()
      await pair.a.subscribe(room, atA.handler)
      await pair.b.subscribe(room, atB.handler)
      pair.a.publish(room, bytes(1, 2, 3))
      pair.a.publish(room, bytes(4))
      pair.b.publish(room, bytes(9))
      await atB.waitFor(2)
      await atA.waitFor(1)
      assert.deepEqual(
        atB.messages.map((m) => [...m]),
        [[1, 2, 3], [4]],
      )
      assert.deepEqual(
        atA.messages.map((m) => [...m]),
        [[9]],
      )
    })

    it('keeps rooms apart and stops delivering after unsubscribe', async () => {
      const room = uniqueRoom('ps')
      const other = uniqueRoom('ps')
      const atB = inbox()
      const atBOther = inbox()
      await pair.b.subscribe(room, atB.handler)
      await pair.b.subscribe(other, atBOther.handler)
      pair.a.publish(room, bytes(1))
      await atB.waitFor(1)
      await pair.b.unsubscribe(room)
      pair.a.publish(room, bytes(2)) // must not arrive
      pair.a.publish(other, bytes(3)) // a marker on the other room, published after it
      await atBOther.waitFor(1)
      assert.deepEqual(
        atB.messages.map((m) => [...m]),
        [[1]],
      )
      assert.deepEqual(
        atBOther.messages.map((m) => [...m]),
        [[3]],
      )
    })

    it('never reports a room alone while another server subscribes to it', async () => {
      const room = uniqueRoom('ps')
      await pair.a.subscribe(room, () => {})
      await pair.b.subscribe(room, () => {})
      assert.equal(pair.a.mayHavePeers(room), true)
      assert.equal(pair.b.mayHavePeers(room), true)
      await pair.b.unsubscribe(room)
      assert.equal(pair.b.mayHavePeers(room), true, 'a has the room: b, not subscribed, has a peer there')
    })

    it("keeps the order of one turn's messages across rooms, many at once", async () => {
      const rooms = [uniqueRoom('ps'), uniqueRoom('ps')]
      const inboxes = rooms.map(() => inbox())
      await Promise.all(rooms.map((room, i) => pair.b.subscribe(room, (inboxes[i] ?? inbox()).handler)))
      for (let n = 0; n < 100; n++) pair.a.publish(rooms[n % 2] as string, bytes(n))
      for (const [i, box] of inboxes.entries()) {
        await box.waitFor(50)
        const expected = Array.from({ length: 50 }, (_, k) => [2 * k + i])
        assert.deepEqual(
          box.messages.map((m) => [...m]),
          expected,
        )
      }
      await Promise.all(rooms.map((room) => pair.b.unsubscribe(room)))
    })

    it('a server that joins a room held alone is heard once it publishes, and hears from then on', async () => {
      const room = uniqueRoom('ps')
      const atA = inbox()
      const atB = inbox()
      await pair.a.subscribe(room, atA.handler)
      pair.a.publish(room, bytes(1)) // nobody else holds the room: the adapter may learn it is alone
      await until(() => !pair.a.mayHavePeers(room), 'a knows it holds the room alone')
      await pair.b.subscribe(room, atB.handler)
      pair.b.publish(room, bytes(2)) // how a server joining announces itself (the room's digest)
      await atA.waitFor(1)
      assert.equal(pair.a.mayHavePeers(room), true, 'a heard b')
      pair.a.publish(room, bytes(3))
      await atB.waitFor(1)
      assert.deepEqual(
        atB.messages.map((m) => [...m]),
        [[3]],
      )
      await pair.b.unsubscribe(room)
      await pair.a.unsubscribe(room)
    })

    it('carries large messages intact', async () => {
      const room = uniqueRoom('ps')
      const atB = inbox()
      await pair.b.subscribe(room, atB.handler)
      const big = new Uint8Array(1024 * 1024).map((_, i) => i % 251)
      pair.a.publish(room, big)
      await atB.waitFor(1)
      assert.deepEqual(atB.messages[0], big)
    })
  })
}
