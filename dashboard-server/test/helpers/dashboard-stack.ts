import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { freePort } from '@symphony/dev-scripts/services'
import { uniqueName } from '@symphony/test-helpers/services'
import { connectIsolatedDatabase } from '@symphony/test-helpers/test-database'
import {
  startTestServer,
  type TestServer,
  type TestServerOverrides,
} from '@symphony/test-helpers/test-server'
import type { DatabaseConnection } from '../../../server/src/adapters/postgres/connect.js'
import { migrate } from '../../../server/src/adapters/postgres/migrations.js'
import { PgMetadataSink } from '../../../server/src/adapters/postgres/pg-metadata-sink.js'
import { openSnapshotStore, snapshotsFrom } from '../../../server/src/adapters/select-snapshot-store.js'
import { silentLogger } from '../../../server/src/logger.js'
import { createDashboardApp, type DashboardDeps } from '../../src/app.js'
import { LiveEvents } from '../../src/live-events.js'
import { DashboardMetrics } from '../../src/metrics.js'
import { MetadataQueries } from '../../src/queries.js'

export const DASHBOARD_TOKEN = 'dashboard-test-token-0123456789'
export const INTERNAL_TOKEN = 'internal-test-token-0123456789'

export interface DashboardStack {
  db: DatabaseConnection
  sync: TestServer
  serverId: string
  /** The sync server's internal endpoint, as the metadata records it. */
  internalAddress: string
  /** `http://127.0.0.1:<port>` of the dashboard. */
  base: string
  /** Starts another sync server writing to the same database (stopped with the stack). */
  addSyncServer(): Promise<{ sync: TestServer; serverId: string }>
  stop(): Promise<void>
}

/** How often the test servers write their samples (production: METADATA_SAMPLE_INTERVAL_MS, 10 s). */
export const SAMPLE_INTERVAL_MS = 200

/** The dashboard's own settings a test may change (default: `DASHBOARD_TOKEN`, every host). */
export type DashboardOverrides = Partial<Pick<DashboardDeps, 'token' | 'allowedHosts'>>

/**
 * The whole read path, real at every step: a sync server writing metadata (at the production
 * flush interval, 1 s) to its own schema in the test Postgres, and the dashboard reading it.
 */
export async function startDashboardStack(
  syncOverrides: TestServerOverrides = {},
  dashboardOverrides: DashboardOverrides = {},
): Promise<DashboardStack> {
  const db = await connectIsolatedDatabase()
  await migrate(db.pool) // the sink does it on its first flush; the dashboard may be asked before
  const startSync = async () => {
    const serverId = uniqueName('sync')
    const internalPort = await freePort()
    let started: TestServer | null = null
    const sink = new PgMetadataSink({
      serverId,
      address: `127.0.0.1:${internalPort}`,
      connect: async () => ({ pool: db.pool, close: async () => {} }),
      logger: silentLogger,
      // The sync server's own readings; its first flush (a second in) comes after it started.
      sample: () => (started ? started.server.sample() : Promise.reject(new Error('not started yet'))),
      metadataSampleIntervalMs: SAMPLE_INTERVAL_MS,
    })
    started = await startTestServer({
      serverId,
      adapters: { metadata: sink },
      metadataSampleIntervalMs: 50,
      ...syncOverrides,
      internal: {
        port: internalPort,
        advertisedHost: '127.0.0.1',
        token: INTERNAL_TOKEN,
      },
    })
    return { sync: started, serverId, internalAddress: `127.0.0.1:${internalPort}` }
  }
  const { sync, serverId, internalAddress } = await startSync()
  const others: TestServer[] = []
  const metrics = new DashboardMetrics({ version: 'test', sseClients: () => events.clientCount })
  const queries = new MetadataQueries(db.pool, (seconds, failed) => metrics.observeQuery(seconds, failed))
  const events = new LiveEvents(db.url, queries)
  await events.start()
  // Read as a separate dashboard process would: from the SNAPSHOTS URL the sync server saves to.
  const snapshots = openSnapshotStore(snapshotsFrom(`file://${sync.snapshotFolder}`, { region: 'us-east-1' }))
  const app = createDashboardApp({
    queries,
    events,
    token: DASHBOARD_TOKEN,
    sessionTtlMs: 12 * 3_600_000,
    internalToken: INTERNAL_TOKEN,
    snapshots,
    metrics,
    ...dashboardOverrides,
  })
  const dashboard = await new Promise<Server>((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server))
  })
  return {
    db,
    sync,
    serverId,
    internalAddress,
    base: `http://127.0.0.1:${(dashboard.address() as AddressInfo).port}`,
    async addSyncServer() {
      const other = await startSync()
      others.push(other.sync)
      return other
    },
    async stop() {
      dashboard.closeAllConnections()
      dashboard.close()
      await Promise.all(others.map((other) => other.stop()))
      await sync.stop()
      await events.close()
      await db.close()
    },
  }
}
