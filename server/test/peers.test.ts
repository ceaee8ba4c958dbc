import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { MemoryBus, MemoryPubSub } from '../src/adapters/memory-pubsub.js'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import { encodeUpdate } from '../src/protocol/codec.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { LossyPubSub } from './helpers/lossy-pubsub.js'
import { collect, openRaw } from './helpers/raw-socket.js'
import { storedState } from './helpers/snapshots.js'
import { startTestServer } from './helpers/test-server.js'

const INTERNAL_TOKEN = 'test-internal-token-0123456789'
const internal = { port: 0, advertisedHost: '127.0.0.1', token: INTERNAL_TOKEN, fetchTimeoutMs: 1_000 }
/** Every server its own copy of each room, the shape this file is about (issue #48 removes it). */
const relay = false

afterEach(cleanUpAfterTest)

async function loadsBy(t: Awaited<ReturnType<typeof startTestServer>>, source: string) {
  const values = (await t.server.metrics.roomLoads.get()).values
  return values.find((v) => v.labels.source === source)?.value ?? 0
}

describe('servers holding the same room', () => {
  it('loads a room another server holds from that server, not from the snapshot store', async () => {
    const bus = new MemoryBus()
    const registryTable = new MemoryRegistryTable()
    const a = await startTestServer({ serverId: 'a', bus, registryTable, internal, relay })
    const b = await startTestServer({ serverId: 'b', bus, registryTable, internal, relay })
    const room = uniqueRoom()
    const writer = await connectSynced(a.wsUrl, room)
    writer.doc.getText('t').insert(0, 'only in A’s memory')
    await eventually(() => a.server.manager.loadedRoom(room)?.doc.getText('t').length === 18, 'A applied it')
    assert.equal(await storedState(a.snapshots, room), null, 'not snapshotted yet')
    const reader = await connectSynced(b.wsUrl, room)
    assert.equal(reader.doc.getText('t').toString(), 'only in A’s memory')
    assert.equal(await loadsBy(b, 'peer'), 1)
    assert.equal(await loadsBy(b, 'snapshot'), 0)
  })

  it('never loads a deleted incarnation from a peer that missed the deletion: the peer is told, and drops it', async () => {
    const bus = new MemoryBus()
    const registryTable = new MemoryRegistryTable()
    const snapshots = new MemorySnapshotStore()
    const shared = { bus, registryTable, internal, relay, adapters: { snapshots } }
    const stale = await startTestServer({ ...shared, serverId: 'stale' })
    const loader = await startTestServer({ ...shared, serverId: 'loader' })
    const room = uniqueRoom()
    const old = await connectSynced(stale.wsUrl, room)
    old.doc.getText('t').insert(0, 'deleted content')
    await eventually(() => stale.server.manager.loadedRoom(room)?.doc.getText('t').length === 15, 'applied')
    const closed = new Promise<number>((resolve) =>
      old.provider.once('connection-close', (event) => resolve(event?.code ?? 0)),
    )
    await snapshots.delete(room, 0) // deleted elsewhere; the stale server never heard of it
    const fresh = await connectSynced(loader.wsUrl, room)
    assert.equal(fresh.doc.getText('t').toString(), '', 'the next incarnation starts empty')
    assert.equal(await closed, CloseCode.RoomDeleted, 'the stale server dropped its copy')
    assert.equal(await loadsBy(loader, 'peer'), 0)
  })

  it('guards the internal endpoint with the token and answers 404 for rooms it does not hold', async () => {
    const a = await startTestServer({ serverId: 'a', internal })
    const room = uniqueRoom()
    await connectSynced(a.wsUrl, room)
    const url = `http://${a.server.internalAddress}/internal/rooms/${room}/state`
    assert.equal((await fetch(url)).status, 401)
    assert.equal(
      (await fetch(url, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status,
      401,
    )
    const auth = { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } }
    assert.equal((await fetch(url, auth)).status, 200)
    const other = `http://${a.server.internalAddress}/internal/rooms/${uniqueRoom()}/state`
    assert.equal((await fetch(other, auth)).status, 404)
    assert.equal(
      (await fetch(`http://${a.server.internalAddress}/internal/rooms/..%2F/state`, auth)).status,
      404,
    )
  })

  it('heals a server that missed pub/sub messages through anti-entropy', async () => {
    const bus = new MemoryBus()
    const lossy = new LossyPubSub('b', bus)
    const a = await startTestServer({ serverId: 'a', bus, antiEntropyIntervalMs: 100 })
    const b = await startTestServer({
      serverId: 'b',
      antiEntropyIntervalMs: 100,
      adapters: { pubsub: lossy },
    })
    const room = uniqueRoom()
    const atA = await connectSynced(a.wsUrl, room)
    const atB = await connectSynced(b.wsUrl, room)
    atA.doc.getText('t').insert(0, 'abcdef')
    await eventually(() => atB.doc.getText('t').toString() === 'abcdef', 'normal fan-out')
    lossy.dropping = true
    atA.doc.getText('t').insert(6, 'XYZ') // new structs
    atA.doc.getText('t').delete(0, 2) // and a deletion, which moves no state vector
    atA.doc.getMap('m').set('k', 1)
    await eventually(() => lossy.dropped >= 3, 'B missed the updates')
    lossy.dropping = false
    await eventually(() => atB.doc.getText('t').toString() === 'cdefXYZ', 'B healed', 10_000)
    assert.equal(atB.doc.getMap('m').get('k'), 1)
    assert.deepEqual(Y.encodeStateVector(atA.doc), Y.encodeStateVector(atB.doc))
  })
})

describe('snapshots written by several servers', () => {
  it('merge with the stored snapshot, so a server that missed an edit never erases it', async () => {
    const bus = new MemoryBus()
    const lossy = new LossyPubSub('b', bus)
    const shared = new FileSnapshotStore(mkdtempSync(join(tmpdir(), 'shared-snap-')))
    const snapshot = { intervalMs: 100, retryBaseMs: 20, retryMaxMs: 100 }
    const a = await startTestServer({ serverId: 'a', bus, snapshot, adapters: { snapshots: shared } })
    const b = await startTestServer({
      serverId: 'b',
      snapshot,
      adapters: { pubsub: lossy, snapshots: shared },
    })
    const room = uniqueRoom()
    const atA = await connectSynced(a.wsUrl, room)
    const atB = await connectSynced(b.wsUrl, room)
    lossy.dropping = true // B misses A's edit (anti-entropy is off here)
    atA.doc.getMap('m').set('from-a', true)
    await eventually(() => lossy.dropped >= 1, 'B missed it')
    atA.destroy()
    await eventually(() => a.server.manager.roomCount === 0, 'A saved and unloaded the room')
    atB.doc.getMap('m').set('from-b', true) // B's periodic snapshot follows, from a copy without A's edit
    const stored = async () => {
      const state = await storedState(shared, room)
      const doc = new Y.Doc()
      if (state) Y.applyUpdate(doc, state)
      return doc.getMap('m').toJSON()
    }
    const deadline = Date.now() + 5_000
    while (!(await stored())['from-b'] && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    assert.deepEqual(await stored(), { 'from-a': true, 'from-b': true })
  })

  it('forwards nothing to clients when a peer sends what the server already has', async () => {
    const bus = new MemoryBus()
    const b = await startTestServer({ serverId: 'b', bus })
    const peer = new MemoryPubSub('peer', bus)
    const room = uniqueRoom()
    const observer = await openRaw(`${b.wsUrl}/${room}`)
    const received = collect(observer)
    await eventually(() => b.server.manager.loadedRoom(room) !== undefined, 'loaded')
    const source = new Y.Doc()
    source.getText('t').insert(0, 'once')
    const update = encodeUpdate(Y.encodeStateAsUpdate(source))
    const before = received.length
    peer.publish(room, update)
    await eventually(() => received.length === before + 1, 'the new update is forwarded')
    const version = b.server.manager.loadedRoom(room)?.version
    peer.publish(room, update) // a duplicate, as several servers answering one digest would send
    source.getText('t').insert(4, '!')
    peer.publish(
      room,
      encodeUpdate(
        Y.encodeStateAsUpdate(source, Y.encodeStateVector(b.server.manager.loadedRoom(room)?.doc as Y.Doc)),
      ),
    )
    await eventually(
      () => b.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'once!',
      'marker',
    )
    assert.equal(received.length, before + 2, 'the duplicate was not forwarded')
    assert.equal(b.server.manager.loadedRoom(room)?.version, (version ?? 0) + 1, 'nor counted as a change')
    await peer.close()
  })
})
