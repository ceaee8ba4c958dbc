import type { Config } from '../config.js'
import type { Adapters } from '../sync-server.js'
import { FileSnapshotStore } from './file-snapshot-store.js'
import { MemoryPubSub } from './memory-pubsub.js'
import { MemoryRoomRegistry } from './memory-room-registry.js'
import { NoopMetadataSink } from './noop-metadata-sink.js'

const LEASE_MS = 30_000

/** Builds the adapter for each port from the parsed configuration. */
export function createAdapters(config: Config): Adapters {
  const self = { serverId: config.serverId, internalAddress: `${config.host}:${config.port}` }
  return {
    pubsub: new MemoryPubSub(config.serverId),
    registry: new MemoryRoomRegistry(self, { leaseMs: LEASE_MS, now: Date.now }),
    snapshots: new FileSnapshotStore(config.snapshotFolder),
    metadata: new NoopMetadataSink(),
  }
}
