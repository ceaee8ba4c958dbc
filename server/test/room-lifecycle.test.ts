import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { MemoryBus, MemoryPubSub } from '../src/adapters/memory-pubsub.js'
import { MemoryRegistryTable, MemoryRoomRegistry } from '../src/adapters/memory-room-registry.js'
import type { RoomRegistry } from '../src/ports/room-registry.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { deferred } from './helpers/deferred.js'
import { closed, collect, openRaw } from './helpers/raw-socket.js'
import { putSnapshot, storedState } from './helpers/snapshots.js'
import { startTestServer, type TestServerOverrides } from './helpers/test-server.js'

/** A test server, saving to `store` when one is given. */
function serverWith(store: ControlledSnapshotStore | null, overrides: TestServerOverrides = {}) {
  return startTestServer({
    ...overrides,
    adapters: { ...(store ? { snapshots: store } : {}), ...overrides.adapters },
  })
}
const controlledStore = () =>
  new ControlledSnapshotStore(new FileSnapshotStore(mkdtempSync(join(tmpdir(), 'snap-'))))
afterEach(cleanUpAfterTest)

async function storedText(store: ControlledSnapshotStore, room: string, key = 't') {
  const state = await storedState(store, room)
  if (!state) return null
  const doc = new Y.Doc()
  Y.applyUpdate(doc, state)
  return doc.getText(key).toString()
}

async function saveText(store: ControlledSnapshotStore, room: string, text: string) {
  const seed = new Y.Doc()
  seed.getText('t').insert(0, text)
  await putSnapshot(store, room, Y.encodeStateAsUpdate(seed))
}

/** Polls an async condition (a store read) until it holds. */
async function eventuallyAsync(check: () => Promise<boolean>, message: string, timeoutMs = 5_000) {
  let last = false
  const poll = async () => {
    last = await check()
  }
  await poll()
  const deadline = Date.now() + timeoutMs
  while (!last) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${message}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
    await poll()
  }
}

describe('room life', () => {
  it('loads a snapshot too big for one event-loop turn whole, and the room works on', async () => {
    const store = controlledStore()
    const room = uniqueRoom()
    const seed = new Y.Doc()
    const text = seed.getText('t')
    for (let i = 0; i < 40_000; i++) text.insert(i % 2 === 0 ? 0 : text.length, `w${i} `) // 40,000 structs
    const state = Y.encodeStateAsUpdate(seed)
    assert.ok(state.length > 256 * 1024, 'above the size loaded in slices')
    await putSnapshot(store, room, state)
    const t = await serverWith(store)
    const [a, b] = await Promise.all([connectSynced(t.wsUrl, room), connectSynced(t.wsUrl, room)])
    assert.equal(a.doc.getText('t').toString(), text.toString())
    a.doc.getText('t').insert(0, 'after ')
    await eventually(() => b.doc.getText('t').toString().startsWith('after w'), 'an edit after the load')
  })

  it('snapshots a dirty room periodically while users stay', async () => {
    const store = controlledStore()
    const t = await serverWith(store, { snapshot: { intervalMs: 150, retryBaseMs: 20, retryMaxMs: 200 } })
    const room = uniqueRoom()
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'periodic')
    await eventuallyAsync(
      async () => (await storedText(store, room)) === 'periodic',
      'the snapshot holds the edit',
    )
    assert.equal(t.server.manager.roomCount, 1, 'the room is still loaded')
    client.doc.getText('t').insert(8, '!')
    await eventuallyAsync(
      async () => (await storedText(store, room)) === 'periodic!',
      'the next change is saved too',
    )
  })

  it('writes one snapshot at a time per room and retries failures until one succeeds', async () => {
    const store = controlledStore()
    store.failSaves = 3
    store.saveDelayMs = 30
    const t = await serverWith(store, { snapshot: { intervalMs: 100, retryBaseMs: 20, retryMaxMs: 100 } })
    const room = uniqueRoom()
    const client = await connectSynced(t.wsUrl, room)
    for (let i = 0; i < 20; i++) {
      client.doc.getText('t').insert(0, `${i % 10}`)
      await new Promise((resolve) => setTimeout(resolve, 15)) // spread edits over several intervals
    }
    const final = client.doc.getText('t').toString()
    await eventuallyAsync(async () => (await storedText(store, room)) === final, 'the final state is saved')
    assert.equal(store.maxInFlight, 1, 'never two writes of one room at once')
    const failures = await t.server.metrics.registry.getSingleMetricAsString(
      'symphony_snapshot_failures_total',
    )
    assert.match(failures, /symphony_snapshot_failures_total 3/)
  })

  it('after the last user leaves: grace period, snapshot, deregister, unload, memory freed', async () => {
    if (typeof globalThis.gc !== 'function') throw new Error('run the tests with --expose-gc (npm test does)')
    const store = controlledStore()
    const table = new MemoryRegistryTable()
    const serverId = 'server-a'
    const registry = new MemoryRoomRegistry(
      { serverId, internalAddress: 'a:1' },
      { leaseMs: 30_000, now: Date.now },
      table,
    )
    const observer = new MemoryRoomRegistry(
      { serverId: 'b', internalAddress: 'b:1' },
      { leaseMs: 30_000, now: Date.now },
      table,
    )
    const t = await serverWith(store, { serverId, roomGraceMs: 100, adapters: { registry } })
    const room = uniqueRoom()
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'kept')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 4, 'applied')
    assert.equal((await observer.peersFor(room)).length, 1, 'registered while loaded')
    const docRef = new WeakRef(t.server.manager.loadedRoom(room)?.doc as Y.Doc)
    client.destroy()
    await eventually(() => t.server.manager.roomCount === 0, 'the room is unloaded')
    assert.equal(await storedText(store, room), 'kept')
    assert.deepEqual(await observer.peersFor(room), [], 'deregistered')
    assert.match(
      await t.server.metrics.registry.getSingleMetricAsString('symphony_rooms'),
      /symphony_rooms 0/,
    )
    await eventuallyAsync(async () => {
      globalThis.gc?.()
      await new Promise((resolve) => setImmediate(resolve))
      return docRef.deref() === undefined
    }, 'the Y.Doc is garbage collected')
    observer.close()
  })

  it('keeps the room loaded for a reconnect within the grace period', async () => {
    const t = await serverWith(null, { roomGraceMs: 10_000 })
    const room = uniqueRoom()
    const first = await connectSynced(t.wsUrl, room)
    const loaded = t.server.manager.loadedRoom(room)
    first.destroy()
    await eventually(() => t.server.manager.holders(room) === 0, 'released')
    const second = await connectSynced(t.wsUrl, room)
    assert.equal(t.server.manager.loadedRoom(room), loaded, 'the same room, not a reload')
    second.destroy()
  })

  it('answers no sync until the room has loaded', async () => {
    const store = controlledStore()
    const room = uniqueRoom()
    await saveText(store, room, 'stored')
    const gate = deferred()
    store.loadGate = gate.promise
    const t = await serverWith(store)
    const raw = await openRaw(`${t.wsUrl}/${room}`)
    const received = collect(raw)
    const client = connectClient(t.wsUrl, room)
    raw.send(new Uint8Array([0, 0, 1, 0])) // sync step 1 with an empty state vector
    const framesAtServer = async () => t.server.metrics.messagesReceived.value
    await eventuallyAsync(async () => (await framesAtServer()) >= 2, 'both clients spoke')
    assert.equal(received.length, 0, 'nothing answered while loading')
    assert.equal(client.provider.synced, false)
    gate.resolve()
    await eventually(() => client.doc.getText('t').toString() === 'stored', 'synced with the loaded state')
    await eventually(() => received.length >= 2, 'the raw client is answered once loaded')
  })

  it('refuses with 1013 and writes nothing when the snapshot store cannot load the room', async () => {
    const store = controlledStore()
    const room = uniqueRoom()
    await saveText(store, room, 'precious')
    const savesBefore = store.saveAttempts
    store.failLoads = true
    const t = await serverWith(store, { roomGraceMs: 0 })
    const raw = await openRaw(`${t.wsUrl}/${room}`)
    assert.equal((await closed(raw)).code, CloseCode.TryAgainLater)
    assert.equal(t.server.manager.roomCount, 0)
    assert.equal(store.saveAttempts, savesBefore, 'no empty document was written over the stored one')
    store.failLoads = false
    const client = await connectSynced(t.wsUrl, room)
    await eventually(
      () => client.doc.getText('t').toString() === 'precious',
      'the stored state, once the store is back',
    )
  })

  it('keeps an empty room in memory while its final snapshot fails, and unloads it once saved', async () => {
    const store = controlledStore()
    const t = await serverWith(store, {
      roomGraceMs: 20,
      snapshot: { intervalMs: 60_000, retryBaseMs: 20, retryMaxMs: 50 },
    })
    const room = uniqueRoom()
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'unsaved')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 7, 'applied')
    store.failSaves = 1_000_000
    client.destroy()
    await eventually(() => store.saveAttempts >= 3, 'several failed attempts')
    assert.equal(t.server.manager.roomCount, 1, 'the room and its changes stay in memory')
    store.failSaves = 0
    await eventually(() => t.server.manager.roomCount === 0, 'unloaded once saved')
    assert.equal(await storedText(store, room), 'unsaved')
  })

  it('applies what another server publishes while this one is still registering the room', async () => {
    const bus = new MemoryBus()
    const gate = deferred()
    const registering = deferred()
    const slowRegistry = registryWith(async () => {
      registering.resolve()
      await gate.promise
    })
    const a = await serverWith(null, { serverId: 'a', adapters: { pubsub: new MemoryPubSub('a', bus) } })
    const b = await serverWith(null, {
      serverId: 'b',
      adapters: { pubsub: new MemoryPubSub('b', bus), registry: slowRegistry },
    })
    const room = uniqueRoom()
    const writer = await connectSynced(a.wsUrl, room)
    const reader = connectClient(b.wsUrl, room)
    await registering.promise
    writer.doc.getText('t').insert(0, 'during registration')
    await eventually(() => writer.doc.getText('t').length > 0, 'local')
    await eventually(() => a.server.manager.loadedRoom(room)?.doc.getText('t').length === 19, 'A applied it')
    gate.resolve()
    await eventually(() => reader.doc.getText('t').toString() === 'during registration', 'B has it too')
  })

  it('loads the room even when the registry cannot register it', async () => {
    const store = controlledStore()
    const room = uniqueRoom()
    await saveText(store, room, 'stored')
    let attempts = 0
    const failing = registryWith(async () => {
      attempts++
      throw new Error('registry down')
    })
    const b = await serverWith(store, { adapters: { registry: failing } })
    const client = await connectSynced(b.wsUrl, room)
    await eventually(() => client.doc.getText('t').toString() === 'stored', 'the room loaded from the store')
    assert.equal(attempts, 1, 'registration was attempted')
    assert.equal(b.server.manager.roomCount, 1)
  })
})

/** A memory registry whose `register` runs `onRegister` first (to delay or fail it). */
function registryWith(onRegister: () => Promise<void>): RoomRegistry {
  const inner = new MemoryRoomRegistry(
    { serverId: 'b', internalAddress: 'b:1' },
    { leaseMs: 30_000, now: Date.now },
  )
  return {
    register: async (room) => {
      await onRegister()
      await inner.register(room)
    },
    deregister: (room) => inner.deregister(room),
    peersFor: (room) => inner.peersFor(room),
    close: () => inner.close(),
  }
}
