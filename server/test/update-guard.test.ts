import assert from 'node:assert/strict'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import { CloseCode } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import { parseConfig } from '../src/config.js'
import { encodeSyncStep1, encodeSyncStep2, encodeUpdate } from '../src/protocol/codec.js'
import { assertKeptPace, startBystanders } from './helpers/bystander.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, eventually, synced, uniqueRoom } from './helpers/clients.js'
import { craft } from './helpers/crafted-updates.js'
import { closed, collect, openRaw } from './helpers/raw-socket.js'
import { contentOf, generateHistory, shuffled } from './helpers/real-documents.js'
import { seededRandom } from './helpers/seeded-random.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

const TEST_FILE = 'server/test/update-guard.test.ts'
/** The limits a server runs with when nothing is configured: what real documents must pass. */
const DEFAULT_LIMITS = parseConfig({ AUTH: 'none' }).limits

function startDefaultServer(): Promise<TestServer> {
  const { maxPendingBytes, maxPendingDeleteBytes, maxDocumentBytes } = DEFAULT_LIMITS
  return startTestServer({ limits: { maxPendingBytes, maxPendingDeleteBytes, maxDocumentBytes } })
}

/**
 * Resolves once the server's copy of the room shows `expected`, with nothing left waiting. Read
 * from a copy: a `Y.Text` on the room's own document would clean up formatting after each remote
 * change (Yjs deletes duplicate marks locally), which the server's copy never does.
 */
async function converged(t: TestServer, room: string, expected: Y.Doc): Promise<void> {
  const want = contentOf(expected)
  const doc = () => t.server.manager.loadedRoom(room)?.doc
  const contentOfCopy = (doc: Y.Doc) => {
    const copy = new Y.Doc()
    Y.applyUpdate(copy, Y.encodeStateAsUpdate(doc))
    return contentOf(copy)
  }
  await eventually(
    () => {
      const doc = t.server.manager.loadedRoom(room)?.doc
      return (
        !!doc &&
        doc.store.pendingStructs === null &&
        doc.store.pendingDs === null &&
        isDeepStrictEqual(contentOfCopy(doc), want)
      )
    },
    'the server converged',
    20_000,
  ).catch((error: Error) => {
    const d = doc()
    const state = d && {
      waiting: d.store.pendingStructs?.update.length,
      deletions: d.store.pendingDs?.length,
    }
    throw new Error(`${error.message} in ${room}: ${JSON.stringify(state)}`)
  })
}

describe('the update guard accepts what real Yjs produces', () => {
  it('through a server: a client with an offline copy syncs it whole, and random-order updates converge', async () => {
    const seeded = seededRandom('SYMPHONY_GUARD_SEED')
    try {
      const t = await startDefaultServer()
      const history = generateHistory({ random: seeded.random, sessions: 300, editsPerSession: 4 })
      // A real provider whose document already holds everything (its IndexedDB copy after the
      // server lost the room) sends it all as its sync step 2.
      const offline = new Y.Doc()
      Y.applyUpdate(offline, Y.encodeStateAsUpdate(history.final))
      const wholeRoom = uniqueRoom('whole')
      const client = connectClient(t.wsUrl, wholeRoom, {}, offline)
      await synced(client)
      await converged(t, wholeRoom, history.final)
      assert.equal(client.provider.wsconnected, true, 'still connected')
      // The same edits as separate updates in a random order, some merged as offline clients send
      // them, from three connections.
      const orderRoom = uniqueRoom('order')
      const sockets = await Promise.all([0, 1, 2].map(() => openRaw(`${t.wsUrl}/${orderRoom}`)))
      const closes = sockets.map((socket) => closed(socket))
      const batches: Uint8Array[] = []
      for (let i = 0; i < history.updates.length; ) {
        const take = seeded.random() < 0.2 ? 2 + Math.floor(seeded.random() * 8) : 1
        const batch = history.updates.slice(i, i + take)
        batches.push(batch.length === 1 ? (batch[0] as Uint8Array) : Y.mergeUpdates(batch))
        i += take
      }
      for (const [n, update] of shuffled(batches, seeded.random).entries()) {
        ;(sockets[n % 3] as (typeof sockets)[number]).send(encodeUpdate(update))
        if (n % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 250)) // under the rate limit
      }
      await converged(t, orderRoom, history.final)
      const early = await Promise.race([...closes, new Promise((resolve) => setImmediate(resolve, null))])
      assert.equal(early, null, 'no connection was closed')
    } catch (error) {
      throw seeded.replayable(error, TEST_FILE)
    }
  })
})

describe('resending what the room holds', () => {
  it('through a server: overlapping parts resent (merged with new ones, cut at any clock) are accepted', async () => {
    const seeded = seededRandom('SYMPHONY_GUARD_SEED')
    try {
      const t = await startDefaultServer()
      const { updates, final } = generateHistory({ random: seeded.random, sessions: 150, editsPerSession: 4 })
      const room = uniqueRoom('resend')
      const sockets = await Promise.all([0, 1, 2].map(() => openRaw(`${t.wsUrl}/${room}`)))
      const closes = sockets.map((socket) => closed(socket))
      const send = async (n: number, update: Uint8Array) => {
        const socket = sockets[n % 3] as (typeof sockets)[number]
        // Some as a sync step 2 (a reconnecting provider's answer), the rest as updates.
        socket.send(n % 4 === 0 ? encodeSyncStep2(update) : encodeUpdate(update))
        if (n % 150 === 149) await new Promise((resolve) => setTimeout(resolve, 250)) // under the rate limit
      }
      let sent = 0
      let n = 0
      while (sent < updates.length) {
        const fresh = updates.slice(sent, sent + 1 + Math.floor(seeded.random() * 4))
        const held = updates.slice(0, sent)
        const pick = () => held[Math.floor(seeded.random() * held.length)] as Uint8Array
        const roll = seeded.random()
        let update: Uint8Array
        if (held.length === 0 || roll < 0.3) update = Y.mergeUpdates(fresh)
        else if (roll < 0.6) update = Y.mergeUpdates([...Array.from({ length: 3 }, pick), ...fresh])
        else {
          // Everything since an earlier point of the room's history, as a client that saw the room
          // then sends it: where the room has merged items since, its first structs start mid-item.
          const seen = Y.encodeStateVectorFromUpdate(
            Y.mergeUpdates(held.slice(0, 1 + Math.floor(seeded.random() * held.length))),
          )
          update = Y.diffUpdate(Y.mergeUpdates([...held, ...fresh]), seen)
        }
        await send(n++, update)
        sent += fresh.length
      }
      await send(n++, Y.encodeStateAsUpdate(final)) // and the whole, as an offline copy would
      await converged(t, room, final)
      const early = await Promise.race([...closes, new Promise((resolve) => setImmediate(resolve, null))])
      assert.equal(early, null, 'no connection was closed')
    } catch (error) {
      throw seeded.replayable(error, TEST_FILE)
    }
  })
})

describe('updates that change nothing', () => {
  it('are neither forwarded nor journaled', async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    const writer = connectClient(t.wsUrl, room)
    await synced(writer)
    writer.doc.getText('t').insert(0, 'once')
    const update = Y.encodeStateAsUpdate(writer.doc)
    const journal = new FileUpdateJournal(join(t.snapshotFolder, 'journal'))
    await eventually(async () => (await journal.read(room)).updates.length === 1, 'journaled once')
    const watcher = await openRaw(`${t.wsUrl}/${room}`)
    const received = collect(watcher)
    watcher.send(encodeSyncStep1(new Uint8Array([0])))
    await eventually(() => received.length > 0, 'the watcher is in the room')
    const before = { received: received.length }
    const resender = await openRaw(`${t.wsUrl}/${room}`)
    resender.send(encodeUpdate(update)) // what the room has already, as a reconnecting client resends
    resender.send(encodeUpdate(Y.encodeStateAsUpdate(writer.doc, Y.encodeStateVector(writer.doc))))
    writer.doc.getText('t').insert(4, '!') // a real change after them, as a marker
    await eventually(() => received.length > before.received, 'the marker arrived')
    assert.equal(received.length, before.received + 1, 'only the marker reached the watcher')
    assert.equal((await journal.read(room)).updates.length, 2, 'only the marker was journaled')
  })
})

describe('the update guard bounds what waits', () => {
  /** The second half of a fresh client's edits, without the first: it waits for good. */
  function orphan(bytes: number): Uint8Array {
    const doc = new Y.Doc()
    doc.getText('t').insert(0, 'a')
    const before = Y.encodeStateVector(doc)
    doc.getText('t').insert(1, 'b'.repeat(bytes))
    return Y.encodeStateAsUpdate(doc, before)
  }

  /** Deletions of `count` items of a client the room never heard of. */
  function deletionsOfUnknownItems(count: number): Uint8Array {
    const doc = new Y.Doc()
    const text = doc.getText('t')
    text.insert(0, 'x'.repeat(count * 2))
    const before = Y.encodeStateAsUpdate(doc)
    for (let i = 0; i < count; i++) text.delete(i, 1) // every other character: separate ranges
    return Y.diffUpdate(Y.encodeStateAsUpdate(doc), Y.encodeStateVectorFromUpdate(before))
  }

  it('closes with 4005 a client whose updates would wait past the room budget, and the room goes on', async () => {
    const t = await startTestServer({
      limits: { maxPendingBytes: 64 * 1024, maxPendingDeleteBytes: 4 * 1024 },
    })
    const room = uniqueRoom()
    const socket = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(socket)
    socket.send(encodeUpdate(orphan(40 * 1024))) // fits
    await eventually(
      () => (t.server.manager.loadedRoom(room)?.doc.store.pendingStructs?.update.length ?? 0) > 0,
      'held',
    )
    socket.send(encodeUpdate(orphan(40 * 1024))) // does not
    assert.equal((await gone).code, CloseCode.TooMuchPending)
    const deleter = await openRaw(`${t.wsUrl}/${room}`)
    const deleterGone = closed(deleter)
    deleter.send(encodeUpdate(deletionsOfUnknownItems(500)))
    await eventually(() => (t.server.manager.loadedRoom(room)?.doc.store.pendingDs?.length ?? 0) > 0, 'held')
    deleter.send(encodeUpdate(deletionsOfUnknownItems(2_000)))
    assert.equal((await deleterGone).code, CloseCode.TooMuchPending)
    const doc = t.server.manager.loadedRoom(room)?.doc as Y.Doc
    assert.ok((doc.store.pendingDs?.length ?? 0) <= 4 * 1024, 'the deletions held stay within budget')
    const crowd = await openRaw(`${t.wsUrl}/${room}`)
    const crowdGone = closed(crowd)
    crowd.send(encodeUpdate(Y.mergeUpdates(Array.from({ length: 1_001 }, () => orphan(1)))))
    assert.equal((await crowdGone).code, CloseCode.TooMuchPending, 'past 1,000 waiting clients')
    const writer = connectClient(t.wsUrl, room)
    await synced(writer)
    writer.doc.getMap('m').set('ok', true)
    await eventually(() => doc.getMap('m').get('ok') === true, 'ordinary edits still apply')
  })

  it('journals, forwards and sizes deletions that wait like any change', async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    const watcher = connectClient(t.wsUrl, room)
    await synced(watcher)
    const deleter = await openRaw(`${t.wsUrl}/${room}`)
    const deletions = deletionsOfUnknownItems(10)
    deleter.send(encodeUpdate(deletions))
    await eventually(() => watcher.doc.store.pendingDs !== null, 'forwarded to the other client')
    await t.server.manager.save(t.server.manager.loadedRoom(room) ? room : '')
    const stored = (await t.snapshots.load(room))?.state
    assert.ok(stored, 'saved: the room was dirty')
    const reloaded = new Y.Doc()
    Y.applyUpdate(reloaded, stored)
    assert.ok(reloaded.store.pendingDs, 'the waiting deletions are in the snapshot')
  })
})

describe('the update guard on a crafted dependency chain', () => {
  it('checks dependency chains between clients in linear time (no stall for the other rooms)', async () => {
    // x0, then x_i after x_(i-1) and before w_(i-1); w_i after x_i; and 2,000 clients after the
    // last x: each x waits on a w and each w on an x, all the way along.
    const n = 20_000
    const update = craft.update((e) => {
      encoding.writeVarUint(e, 2 + 2_000)
      craft.group(e, n, 1, 0)
      craft.item(e, 'x')
      for (let i = 1; i < n; i++) craft.item(e, 'x', [1, i - 1], [2, i - 1])
      craft.group(e, n, 2, 0)
      for (let i = 0; i < n; i++) craft.item(e, 'w', [1, i])
      for (let c = 0; c < 2_000; c++) {
        craft.group(e, 1, 1_000 + c, 0)
        craft.item(e, 'm', [1, n - 1])
      }
      encoding.writeVarUint(e, 0)
    })
    const t = await startTestServer()
    const bystanders = await startBystanders(t.wsUrl)
    const room = uniqueRoom()
    const writer = await openRaw(`${t.wsUrl}/${room}`)
    writer.send(encodeUpdate(update))
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 2 * n + 2_000,
      'applied',
    )
    assertKeptPace(await bystanders.stop())
  })
})

describe('the update guard weighs big updates against each other', () => {
  it('refuses (4005) a big update with a gap, which could not be applied in slices', async () => {
    const writer = new Y.Doc()
    const pieces: Uint8Array[] = []
    writer.on('update', (update: Uint8Array) => pieces.push(update))
    for (let i = 0; i < 3; i++) writer.getText('t').insert(0, 'x'.repeat(200_000))
    const gapped = Y.mergeUpdates([pieces[0] as Uint8Array, pieces[2] as Uint8Array]) // the middle is missing
    assert.ok(gapped.length > 256 * 1024)
    const t = await startTestServer()
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom()}`)
    const gone = closed(socket)
    socket.send(encodeUpdate(gapped))
    assert.equal((await gone).code, CloseCode.TooMuchPending)
  })

  it('checks concurrent big updates against each other: both cannot pass the size ceiling', async () => {
    const t = await startTestServer({
      limits: { maxDocumentBytes: 1024 * 1024, maxMessageBytes: 2 * 1024 * 1024 },
    })
    const room = uniqueRoom()
    const bigUpdate = () => {
      const doc = new Y.Doc()
      doc.getText('t').insert(0, 'y'.repeat(600 * 1024))
      return encodeUpdate(Y.encodeStateAsUpdate(doc))
    }
    const sockets = await Promise.all([0, 1].map(() => openRaw(`${t.wsUrl}/${room}`)))
    const outcomes = sockets.map(
      (socket) =>
        new Promise<number | null>((resolve) => {
          socket.once('close', (code) => resolve(code))
          socket.on('message', (data: Buffer) => data[0] === 0 && data[1] === 1 && resolve(null))
        }),
    )
    for (const socket of sockets) socket.send(bigUpdate())
    for (const socket of sockets) socket.send(encodeSyncStep1(new Uint8Array([0])))
    const results = await Promise.all(outcomes)
    assert.deepEqual(results.sort(), [4004, null], 'one applied, the other refused for the ceiling')
  })
})
