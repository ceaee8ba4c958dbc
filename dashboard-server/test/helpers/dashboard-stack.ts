import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { freePort } from '../../../scripts/lib/services.mjs'
import { openSnapshotStore } from '../../../server/src/adapters/open-snapshot-store.js'
import type { DatabaseConnection } from '../../../server/src/adapters/postgres/connect.js'
import { migrate } from '../../../server/src/adapters/postgres/migrations.js'
import { PgMetadataSink } from '../../../server/src/adapters/postgres/pg-metadata-sink.js'
import { silentLogger } from '../../../server/src/logger.js'
import { uniqueName } from '../../../server/test/helpers/services.js'
import { connectIsolatedDatabase } from '../../../server/test/helpers/test-database.js'
import {
  startTestServer,
  type TestServer,
  type TestServerOverrides,
} from '../../../server/test/helpers/test-server.js'
import { createDashboardApp } from '../../src/app.js'
import { LiveEvents } from '../../src/live-events.js'
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
  stop(): Promise<void>
}

/**
 * The whole read path, real at every step: a sync server writing metadata (at the production
 * flush interval, 1 s) to its own schema in the test Postgres, and the dashboard reading it.
 */
export async function startDashboardStack(syncOverrides: TestServerOverrides = {}): Promise<DashboardStack> {
  const db = await connectIsolatedDatabase()
  await migrate(db.pool) // the sink does it on its first flush; the dashboard may be asked before
  const serverId = uniqueName('sync')
  const internalPort = await freePort()
  const internalAddress = `127.0.0.1:${internalPort}`
  const sink = new PgMetadataSink({
    serverId,
    address: internalAddress,
    connect: async () => ({ pool: db.pool, close: async () => {} }),
    logger: silentLogger,
  })
  const sync = await startTestServer({
    serverId,
    adapters: { metadata: sink },
    metadataSampleIntervalMs: 50,
    ...syncOverrides,
    internal: {
      port: internalPort,
      advertisedHost: '127.0.0.1',
      token: INTERNAL_TOKEN,
      fetchTimeoutMs: 1_000,
    },
  })
  const queries = new MetadataQueries(db.pool)
  const events = new LiveEvents(db.url, queries)
  await events.start()
  // Read as a separate dashboard process would: from the SNAPSHOTS URL the sync server saves to.
  const snapshots = openSnapshotStore(`file://${sync.snapshotFolder}`, { region: 'us-east-1' })
  const app = createDashboardApp({
    queries,
    events,
    token: DASHBOARD_TOKEN,
    sessionTtlMs: 12 * 3_600_000,
    internalToken: INTERNAL_TOKEN,
    snapshots,
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
    async stop() {
      dashboard.closeAllConnections()
      dashboard.close()
      await sync.stop()
      await events.close()
      await db.close()
    },
  }
}
