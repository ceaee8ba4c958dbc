import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { createSnapshotBucket, S3SnapshotStore } from '../src/adapters/s3-snapshot-store.js'
import type { SnapshotStore } from '../src/ports/snapshot-store.js'
import { encodeSyncStep1 } from '../src/protocol/codec.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { deferred } from './helpers/deferred.js'
import { collect, openRaw } from './helpers/raw-socket.js'
import { testAwsClients, uniqueName } from './helpers/services.js'
import { storedState } from './helpers/snapshots.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

const EMPTY_STATE_VECTOR = new Uint8Array([0])

function docOf(state: Uint8Array | null): Y.Doc {
  const doc = new Y.Doc()
  if (state) Y.applyUpdate(doc, state)
  return doc
}

const contains = (bytes: Uint8Array | null, text: string) => !!bytes && Buffer.from(bytes).includes(text)

/** Everything a joiner that holds nothing receives when it syncs. */
async function whatAJoinerReceives(t: TestServer, room: string): Promise<Buffer> {
  const socket = await openRaw(`${t.wsUrl}/${room}`)
  const frames = collect(socket)
  socket.send(encodeSyncStep1(EMPTY_STATE_VECTOR))
  await eventually(() => frames.some((f) => f[0] === 0 && f[1] === 1), 'the sync step 2')
  socket.close()
  return Buffer.concat(frames)
}

describe('snapshots hold the document, not its deleted history', () => {
  it('drops deleted content that an older snapshot still carried, at the next save', async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    const legacy = new Y.Doc({ gc: false }) // what byte-wise merged snapshots used to keep
    legacy.getText('t').insert(0, 'kept deleted-long-ago')
    legacy.getText('t').delete(4, 17)
    await t.snapshots.save(room, Y.encodeStateAsUpdate(legacy), null)
    const joined = await whatAJoinerReceives(t, room)
    assert.equal(contains(joined, 'deleted-long-ago'), false, 'a joiner never gets it')
    const client = await connectSynced(t.wsUrl, room)
    assert.equal(client.doc.getText('t').toString(), 'kept')
    client.doc.getText('t').insert(4, '!')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 5, 'applied')
    await t.server.manager.save(room)
    const stored = await storedState(t.snapshots, room)
    assert.equal(contains(stored, 'deleted-long-ago'), false, 'gone from storage')
    assert.equal(docOf(stored).getText('t').toString(), 'kept!')
  })
})

/** Both kinds of store, the S3 one against the emulator. */
const sharedStores: [string, () => Promise<() => SnapshotStore>][] = [
  [
    'files',
    async () => {
      const folder = mkdtempSync(join(tmpdir(), 'shared-snap-'))
      return () => new FileSnapshotStore(folder)
    },
  ],
  [
    'S3',
    async () => {
      const { s3 } = testAwsClients()
      await createSnapshotBucket(s3, 'symphony-test-snapshots')
      const prefix = `${uniqueName('savers')}/`
      return () => new S3SnapshotStore({ bucket: 'symphony-test-snapshots', prefix, client: s3 })
    },
  ],
]

for (const [kind, openShared] of sharedStores) {
  // Two servers that each believe they own the room (each its own registry, as an owner cut off
  // past its lease and its successor are, before fencing stops the first): the store's conditional
  // writes and the merge on conflict keep every edit either saved.
  describe(`two servers saving one room (${kind})`, () => {
    it('never lose an update to a stale save, even when the stale saver then dies', async () => {
      const open = await openShared()
      const bStore = new ControlledSnapshotStore(open())
      const a = await startTestServer({ serverId: 'a', adapters: { snapshots: open() } })
      const b = await startTestServer({ serverId: 'b', adapters: { snapshots: bStore } })
      const room = uniqueRoom()
      const atA = await connectSynced(a.wsUrl, room)
      const atB = await connectSynced(b.wsUrl, room)
      atB.doc.getMap('m').set('from-b', true)
      atA.doc.getMap('m').set('from-a', true)
      // B encodes its copy, without A's edit, and is held just before it writes...
      const gate = deferred()
      const bWrites = deferred()
      bStore.saveGate = gate.promise
      bStore.onSave = () => bWrites.resolve()
      await eventually(
        () => b.server.manager.loadedRoom(room)?.doc.getMap('m').has('from-b') === true,
        'B has its edit',
      )
      const bSave = b.server.manager.save(room)
      await bWrites.promise
      // ...while A saves its edit and trims its journal.
      await eventually(
        () => a.server.manager.loadedRoom(room)?.doc.getMap('m').has('from-a') === true,
        'A has it',
      )
      await a.server.manager.save(room)
      assert.equal(
        docOf(await storedState(open(), room))
          .getMap('m')
          .get('from-a'),
        true,
        'A saved it',
      )
      gate.resolve()
      await bSave
      // B dies, A's users leave (A has nothing unsaved, so it writes nothing more).
      await b.stop()
      atA.destroy()
      atB.destroy()
      await eventually(() => a.server.manager.roomCount === 0, 'A unloaded the room')
      const stored = docOf(await storedState(open(), room))
        .getMap('m')
        .toJSON()
      assert.deepEqual(stored, { 'from-a': true, 'from-b': true }, 'every edit is stored')
      const metrics = await b.server.metrics.registry.getSingleMetricAsString(
        'symphony_snapshot_conflicts_total',
      )
      assert.match(metrics, /symphony_snapshot_conflicts_total [1-9]/, 'B merged after a refused save')
    })

    it('keep every edit while both save over and over', async () => {
      const open = await openShared()
      const snapshot = { intervalMs: 5, retryBaseMs: 5, retryMaxMs: 20 }
      const servers = await Promise.all(
        ['a', 'b'].map((serverId) =>
          startTestServer({ serverId, snapshot, adapters: { snapshots: open() } }),
        ),
      )
      const room = uniqueRoom()
      const clients = await Promise.all(servers.map((t) => connectSynced(t.wsUrl, room)))
      for (let i = 0; i < 60; i++) {
        for (const [n, client] of clients.entries()) client.doc.getMap('m').set(`${n}-${i}`, i)
        await new Promise((resolve) => setImmediate(resolve))
      }
      for (const [n, t] of servers.entries()) {
        await eventually(
          () => t.server.manager.loadedRoom(room)?.doc.getMap('m').has(`${n}-59`) === true,
          'applied',
        )
      }
      await Promise.all(servers.map((t) => t.server.manager.save(room)))
      await Promise.all(servers.map((t) => t.server.manager.save(room)))
      const stored = docOf(await storedState(open(), room)).getMap('m')
      for (let i = 0; i < 60; i++) {
        for (const n of [0, 1]) assert.equal(stored.get(`${n}-${i}`), i, `${n}-${i} is stored`)
      }
    })
  })
}
