import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { afterEach, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { internalRoomPath } from '@symphony/client/wire'
// By the package's name, as an app embedding the server imports it.
import {
  type AdapterContext,
  createSyncServer,
  MemorySnapshotStore,
  type SnapshotHead,
  type SnapshotStore,
  type StoredSnapshot,
  type SyncServer,
} from '@symphony/server'
import * as Y from 'yjs'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'

/** An app's own snapshot store: the memory store, with every save and the close on record. */
class RecordingSnapshotStore implements SnapshotStore {
  readonly saves: { room: string; state: Uint8Array }[] = []
  closed = false

  constructor(private readonly inner: SnapshotStore) {}

  load(room: string): Promise<StoredSnapshot | null> {
    return this.inner.load(room)
  }

  head(room: string): Promise<SnapshotHead | null> {
    return this.inner.head(room)
  }

  delete(room: string, generation: number): Promise<void> {
    return this.inner.delete(room, generation)
  }

  listVersions(room: string, options: { limit: number; cursor?: string | null }) {
    return this.inner.listVersions(room, options)
  }

  readVersion(room: string, id: string): Promise<StoredSnapshot> {
    return this.inner.readVersion(room, id)
  }

  async save(room: string, state: Uint8Array, expected: string | null, generation?: number): Promise<string> {
    const version = await this.inner.save(room, state, expected, generation)
    this.saves.push({ room, state })
    return version
  }

  close(): Promise<void> {
    this.closed = true
    return this.inner.close()
  }
}

describe('the server embedded with createSyncServer', () => {
  const servers: SyncServer[] = []
  afterEach(async () => {
    destroyClients()
    await Promise.all(servers.splice(0).map((server) => server.shutdown()))
  })
  // The journal in memory too, so nothing lands in the working directory's ./data.
  const backends = { journal: { kind: 'memory' } } as const

  it('syncs two y-websocket providers, saves through the adapter it was given and closes it', async () => {
    const snapshots = new RecordingSnapshotStore(new MemorySnapshotStore())
    const server = await createSyncServer({ auth: { mode: 'none' }, backends, adapters: { snapshots } })
    servers.push(server)
    const url = `ws://127.0.0.1:${server.port}`
    const room = uniqueRoom('embedded')
    const alice = await connectSynced(url, room)
    const bob = await connectSynced(url, room)
    alice.doc.getText('notes').insert(0, 'hello from alice')
    await eventually(() => bob.doc.getText('notes').toString() === 'hello from alice', 'bob sees the edit')

    assert.deepEqual(await server.shutdown(), [], 'every room saved')
    const saved = snapshots.saves.findLast((save) => save.room === room)
    assert.ok(saved, 'the room was saved through the given store')
    const restored = new Y.Doc()
    Y.applyUpdate(restored, saved.state)
    assert.equal(restored.getText('notes').toString(), 'hello from alice')
    assert.equal(snapshots.closed, true, 'the server closes the adapters it was given')
  })

  it('builds adapters from a function once it knows who it is and where peers reach it', async () => {
    let seen: AdapterContext | undefined
    const token = 'internal-token-0123456789'
    // No advertised host: bound to loopback (the default), the server must tell peers that address.
    const server = await createSyncServer({
      auth: { mode: 'none' },
      serverId: 'embedded-a',
      internal: { port: 0, token },
      backends,
      adapters: (context) => {
        seen = context
        return { snapshots: new MemorySnapshotStore() }
      },
    })
    servers.push(server)
    assert.equal(seen?.self.serverId, 'embedded-a')
    assert.equal(seen?.self.internalAddress, server.internalAddress)
    assert.match(server.internalAddress ?? '', /^127\.0\.0\.1:\d+$/)
    const peerFetch = await fetch(`http://${server.internalAddress}${internalRoomPath('nowhere', 'state')}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    assert.equal(peerFetch.status, 404, 'a peer reaches the endpoint there (the room is just not loaded)')
  })

  it('starts nothing when imported: a process importing the package and its suites exits by itself', () => {
    const script = `
      const server = await import('@symphony/server')
      const contracts = await import('@symphony/server/contracts')
      console.log(typeof server.createSyncServer, typeof server.parseConfig, typeof contracts.snapshotStoreContract)
    `
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      encoding: 'utf8',
      timeout: 20_000,
    })
    assert.equal(result.signal, null, 'it exited on its own, nothing kept it running')
    assert.equal(result.status, 0, result.stderr)
    assert.equal(result.stdout.trim(), 'function function function')
  })
})
