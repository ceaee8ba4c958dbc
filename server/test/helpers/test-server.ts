import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FileSnapshotStore } from '../../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../../src/adapters/file-update-journal.js'
import { MemoryRegistryTable, MemoryRoomRegistry } from '../../src/adapters/memory-room-registry.js'
import { MemorySnapshotStore } from '../../src/adapters/memory-snapshot-store.js'
import { MemoryJournalTable, MemoryUpdateJournal } from '../../src/adapters/memory-update-journal.js'
import { NoopMetadataSink } from '../../src/adapters/noop-metadata-sink.js'
import type { Limits } from '../../src/config.js'
import { createSyncServer } from '../../src/create-sync-server.js'
import type { Adapters } from '../../src/ports/adapters.js'
import type { SnapshotStore } from '../../src/ports/snapshot-store.js'
import type { SyncServerOptions } from '../../src/server-options.js'
import type { SyncServer } from '../../src/sync-server.js'

export const TEST_LIMITS: Limits = {
  maxMessageBytes: 1024 * 1024,
  maxDocumentBytes: 16 * 1024 * 1024,
  maxDocumentStructs: 1_000_000,
  maxPendingBytes: 1024 * 1024,
  maxPendingDeleteBytes: 32 * 1024,
  maxPresenceBytes: 16 * 1024,
  maxBufferedBytes: 16 * 1024 * 1024,
  memoryBudgetBytes: 512 * 1024 * 1024,
  maxConnections: 1000,
  maxConnectionsPerRoom: 100,
  messagesPerSecond: 1000,
  messageBurst: 2000,
  pingIntervalMs: 30_000,
}

export interface TestServer {
  server: SyncServer
  /** `ws://127.0.0.1:<port>` */
  wsUrl: string
  httpUrl: string
  snapshotFolder: string
  snapshots: SnapshotStore
  stop(): Promise<void>
}

export interface TestServerOverrides extends Partial<Omit<SyncServerOptions, 'adapters'>> {
  /** Instead of the embedded ones below (memory registry, files, no metadata). */
  adapters?: Partial<Adapters>
  /** Shared by servers that should see each other, as DynamoDB would be. */
  registryTable?: MemoryRegistryTable
}

const running = new Set<TestServer>()

/** The server still answers its health check (after an attack on it). */
export async function assertAlive(t: TestServer): Promise<void> {
  assert.equal((await fetch(`${t.httpUrl}/healthz`)).status, 200, 'the process still serves')
}

/** Stops every server the test started, passed or failed (use in `afterEach`). */
export async function stopTestServers(): Promise<void> {
  await Promise.all([...running].map((t) => t.stop()))
}

/** A real sync server on a free port, with embedded adapters in a fresh temporary folder. */
export async function startTestServer(overrides: TestServerOverrides = {}): Promise<TestServer> {
  const snapshotFolder = mkdtempSync(join(tmpdir(), 'symphony-test-'))
  const serverId = overrides.serverId ?? `test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const snapshots = overrides.adapters?.snapshots ?? new FileSnapshotStore(snapshotFolder)
  const { registryTable, ...options } = overrides
  const server = await createSyncServer({
    serverId,
    auth: { mode: 'none' },
    snapshot: { intervalMs: 30_000, retryBaseMs: 20, retryMaxMs: 200 },
    roomGraceMs: 50,
    metadataSampleIntervalMs: 0,
    shutdownTimeoutMs: 5_000,
    ...options,
    limits: { ...TEST_LIMITS, ...overrides.limits },
    adapters: ({ self }) => ({
      registry: new MemoryRoomRegistry(self, { leaseMs: 30_000, now: Date.now }, registryTable),
      metadata: new NoopMetadataSink(),
      journal: new FileUpdateJournal(join(snapshotFolder, 'journal')),
      ...overrides.adapters,
      snapshots,
    }),
  })
  const testServer: TestServer = {
    server,
    wsUrl: `ws://127.0.0.1:${server.port}`,
    httpUrl: `http://127.0.0.1:${server.port}`,
    snapshotFolder,
    snapshots,
    stop: async () => {
      running.delete(testServer)
      await server.shutdown()
    },
  }
  running.add(testServer)
  return testServer
}

/** The internal endpoint of a test server that has peers (on a free port). */
export const TEST_INTERNAL = {
  port: 0,
  advertisedHost: '127.0.0.1',
  token: 'internal-token-0123456789',
}

/**
 * Two servers that share the room registry, the journal and the snapshots in memory, and
 * relay to each other (one owner per room): a cluster in one process.
 */
export async function startTestCluster(
  overrides: TestServerOverrides = {},
): Promise<[TestServer, TestServer]> {
  const journals = new MemoryJournalTable()
  const snapshots = overrides.adapters?.snapshots ?? new MemorySnapshotStore()
  const adapters = () => ({
    journal: new MemoryUpdateJournal(journals),
    ...overrides.adapters,
    snapshots,
  })
  const shared = {
    ...overrides,
    registryTable: new MemoryRegistryTable(),
    internal: TEST_INTERNAL,
  }
  return [
    await startTestServer({ ...shared, serverId: 'a', adapters: adapters() }),
    await startTestServer({ ...shared, serverId: 'b', adapters: adapters() }),
  ]
}
