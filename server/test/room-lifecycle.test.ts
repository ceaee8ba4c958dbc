import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { MemoryRegistryTable, MemoryRoomRegistry } from '../src/adapters/memory-room-registry.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { closed, openRaw } from './helpers/raw-socket.js'
import { registryAround } from './helpers/registries.js'
import { putSnapshot, storedState } from './helpers/snapshots.js'
import { startTestServer, TEST_INTERNAL, type TestServerOverrides } from './helpers/test-server.js'

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
    assert.equal((await observer.ownerOf(room))?.serverId, serverId, 'owned while loaded')
    const docRef = new WeakRef(t.server.manager.loadedRoom(room)?.doc as Y.Doc)
    client.destroy()
    await eventually(() => t.server.manager.roomCount === 0, 'the room is unloaded')
    assert.equal(await storedText(store, room), 'kept')
    assert.equal(await observer.ownerOf(room), null, 'released')
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

  it('keeps a client waiting while the snapshot store cannot load the room, closes it (1013) when its wait runs out, and writes nothing', async () => {
    const store = controlledStore()
    const room = uniqueRoom()
    await saveText(store, room, 'precious')
    const savesBefore = store.saveAttempts
    store.failLoads = true
    const t = await serverWith(store, { roomGraceMs: 0, joinWaitMs: 300, roomLoadRetryMs: 20 })
    const raw = await openRaw(`${t.wsUrl}/${room}`)
    assert.deepEqual(await closed(raw), {
      code: CloseCode.TryAgainLater,
      reason: 'the room did not load within 300 ms; retry',
    })
    // Retried while the client waited, given up once nobody did.
    await eventually(() => t.server.manager.roomCount === 0, 'the load is given up')
    assert.match(
      await t.server.metrics.registry.getSingleMetricAsString('symphony_room_load_retries_total'),
      /symphony_room_load_retries_total [1-9]/,
    )
    assert.equal(store.saveAttempts, savesBefore, 'no empty document was written over the stored one')
    store.failLoads = false
    const client = await connectSynced(t.wsUrl, room)
    await eventually(
      () => client.doc.getText('t').toString() === 'precious',
      'the stored state, once the store is back',
    )
  })
})

describe('a registry that stops answering', () => {
  it('holds no load, unload or deletion longer than REGISTRY_WAIT_MS (the join wait, when it needs an owner)', async () => {
    const never = new Promise<never>(() => {})
    let hung = false
    const registry = registryAround('hung', (_call, pass) => (hung ? never : pass()))
    const t = await startTestServer({
      registryWaitMs: 100,
      joinWaitMs: 1_000,
      internal: TEST_INTERNAL,
      adapters: { registry },
    })
    const room = uniqueRoom('hung-registry')
    const client = await connectSynced(t.wsUrl, room)
    hung = true
    client.doc.getText('t').insert(0, 'owned before')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 12, 'applied')
    client.destroy()
    await eventually(() => t.server.manager.roomCount === 0, 'unloaded, its release left to the lease')
    // No claim, no owner: the joiner waits for the room, then is told to retry (one owner or none).
    const joiner = await openRaw(`${t.wsUrl}/${room}`)
    assert.equal((await closed(joiner)).code, CloseCode.TryAgainLater)
    // Nor a deletion: only an owner deletes, and there is none.
    await assert.rejects(t.server.room(room).delete(), /ROOM_UNAVAILABLE|did not load/)
    hung = false
    // Retried, as a caller of a 503 does: the room's load retries with backoff meanwhile.
    await eventuallyAsync(
      () =>
        t.server
          .room(room)
          .delete()
          .then(
            () => true,
            () => false,
          ),
      'the deletion goes through once the registry answers',
    )
    const again = await connectSynced(t.wsUrl, room)
    assert.equal(again.doc.getText('t').toString(), '', 'deleted')
    again.destroy()
  })
})
