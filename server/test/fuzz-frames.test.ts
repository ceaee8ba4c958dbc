import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { encodeUpdate } from '../src/protocol/codec.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { collect, openRaw } from './helpers/raw-socket.js'
import { seededRandom } from './helpers/seeded-random.js'
import { assertAlive, startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

/** What a server may answer a random frame with: accept it, or close with one of these. */
const ALLOWED_CLOSES = new Set<number>([
  CloseCode.ProtocolError,
  CloseCode.UnsupportedData,
  CloseCode.MessageTooBig,
  CloseCode.DocumentTooLarge,
  CloseCode.RateLimited,
])

/** Valid updates to mutate: text, map, array and deletions, as real clients send them. */
function seedUpdates(): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  doc.getText('t').insert(0, 'hello world')
  doc.getText('t').delete(2, 3)
  doc.getMap('m').set('k', { a: [1, 2, { b: 'c' }] })
  doc.getArray('a').insert(0, [1, 'two', null, true])
  doc.getText('t').format(0, 3, { bold: true })
  return updates
}

describe('random frames (seeded: SYMPHONY_FUZZ_SEED replays a run)', () => {
  it('random and mutated frames are applied or refused with a protocol close, never more', async (t) => {
    const { seed, random, replayable } = seededRandom('SYMPHONY_FUZZ_SEED')
    t.diagnostic(`seed ${seed}`)
    const byte = () => Math.floor(random() * 256)
    const seeds = seedUpdates()
    const frame = (): Uint8Array => {
      if (random() < 0.3) {
        // Pure noise, usually behind a real message type so it gets past the first byte.
        const noise = Uint8Array.from({ length: 1 + Math.floor(random() * 64) }, byte)
        if (random() < 0.7) noise[0] = Math.floor(random() * 4)
        return noise
      }
      // A real update with a few bytes flipped, inserted or cut off.
      const update = [...(seeds[Math.floor(random() * seeds.length)] as Uint8Array)]
      for (let n = 1 + Math.floor(random() * 4); n > 0; n--) {
        const at = Math.floor(random() * update.length)
        const roll = random()
        if (roll < 0.6) update[at] = byte()
        else if (roll < 0.8) update.splice(at, 0, byte())
        else update.length = Math.max(1, at)
      }
      return encodeUpdate(Uint8Array.from(update))
    }

    const server = await startTestServer({ limits: { messagesPerSecond: 10_000, messageBurst: 10_000 } })
    const room = uniqueRoom('fuzz')
    const bystanders = await startBystanders(server.wsUrl)
    const closes = new Map<number, number>()
    try {
      for (let round = 0; round < 300; round++) {
        const socket = await openRaw(`${server.wsUrl}/${room}`)
        collect(socket)
        const gone = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)))
        const frames = 1 + Math.floor(random() * 3)
        for (let i = 0; i < frames && socket.readyState === socket.OPEN; i++) socket.send(frame())
        // Ask for the server's state: its answer (sync step 2) comes after every frame before it.
        if (socket.readyState === socket.OPEN) socket.send(new Uint8Array([0, 0, 1, 0]))
        const answered = new Promise<number>((resolve) =>
          socket.on('message', (data: Buffer) => data[0] === 0 && data[1] === 1 && resolve(0)),
        )
        const code = await Promise.race([gone, answered])
        if (code !== 0) {
          assert.ok(ALLOWED_CLOSES.has(code), `round ${round}: closed with ${code}`)
          closes.set(code, (closes.get(code) ?? 0) + 1)
        }
        socket.terminate()
        const doc = server.server.manager.loadedRoom(room)?.doc
        if (doc) assert.doesNotThrow(() => Y.encodeStateAsUpdate(doc), `round ${round}: the document encodes`)
      }
      t.diagnostic(`closes: ${JSON.stringify(Object.fromEntries(closes))}`)
      const late = await connectSynced(server.wsUrl, room)
      late.doc.getMap('after').set('fuzz', 'works')
      const other = await connectSynced(server.wsUrl, room)
      await eventually(() => other.doc.getMap('after').get('fuzz') === 'works', 'the room still syncs')
      assertKeptPace(await bystanders.stop())
      await assertAlive(server)
    } catch (error) {
      throw replayable(error, 'server/test/fuzz-frames.test.ts')
    }
  })
})
