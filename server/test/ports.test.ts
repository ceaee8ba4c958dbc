import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { MemoryBus, MemoryPubSub } from '../src/adapters/memory-pubsub.js'
import { MemoryRegistryTable, MemoryRoomRegistry } from '../src/adapters/memory-room-registry.js'
import { NoopMetadataSink } from '../src/adapters/noop-metadata-sink.js'
import { metadataSinkContract } from './contracts/metadata-sink.contract.js'
import { pubSubContract } from './contracts/pubsub.contract.js'
import { roomRegistryContract } from './contracts/room-registry.contract.js'
import { snapshotStoreContract } from './contracts/snapshot-store.contract.js'

// Each port's contract suite, run against every adapter that exists.

pubSubContract('MemoryPubSub', async () => {
  const bus = new MemoryBus()
  const a = new MemoryPubSub('a', bus)
  const b = new MemoryPubSub('b', bus)
  return { a, b, cleanup: async () => void (await Promise.all([a.close(), b.close()])) }
})

roomRegistryContract('MemoryRoomRegistry', async (leaseMs) => {
  const table = new MemoryRegistryTable()
  const serverA = { serverId: 'a', internalAddress: '10.0.0.1:4000' }
  const serverB = { serverId: 'b', internalAddress: '10.0.0.2:4000' }
  const a = new MemoryRoomRegistry(serverA, { leaseMs, now: Date.now }, table)
  const b = new MemoryRoomRegistry(serverB, { leaseMs, now: Date.now }, table)
  return {
    a,
    b,
    serverA,
    serverB,
    leaseMs,
    cleanup: async () => void (await Promise.all([a.close(), b.close()])),
  }
})

snapshotStoreContract(
  'FileSnapshotStore',
  async () => new FileSnapshotStore(mkdtempSync(join(tmpdir(), 'snap-'))),
)

metadataSinkContract('NoopMetadataSink', async () => new NoopMetadataSink())
