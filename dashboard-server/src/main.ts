import { createRequire } from 'node:module'
import { openSnapshotStore, snapshotsFrom } from '@symphony/server/snapshots'
import pg from 'pg'
import { pino } from 'pino'
import { createDashboardApp } from './app.js'
import { parseDashboardConfig } from './config.js'
import { LiveEvents } from './live-events.js'
import { DashboardMetrics } from './metrics.js'
import { MetadataQueries } from './queries.js'

const logger = pino({ name: 'dashboard' })
let config: ReturnType<typeof parseDashboardConfig>
try {
  config = parseDashboardConfig(process.env)
} catch (error) {
  logger.fatal(`bad configuration: ${(error as Error).message}`)
  process.exit(1)
}
if (!config.token) {
  logger.warn(
    'DASHBOARD_TOKEN is not set: the dashboard is open to anyone who can reach it ' +
      '(by a loopback name, or one DASHBOARD_ALLOWED_HOSTS lists)',
  )
}

const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 8, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => logger.warn({ err: error }, 'database connection lost'))
const version = (createRequire(import.meta.url)('../package.json') as { version: string }).version
const metrics = new DashboardMetrics({ version, sseClients: () => events.clientCount })
const queries = new MetadataQueries(pool, (seconds, failed) => metrics.observeQuery(seconds, failed))
const events = new LiveEvents(config.databaseUrl, queries, logger)
await events.start()
const app = createDashboardApp({
  queries,
  events,
  token: config.token,
  allowedHosts: config.allowedHosts,
  sessionTtlMs: config.sessionTtlMs,
  internalToken: config.internalToken,
  snapshots: openSnapshotStore(snapshotsFrom(config.snapshots, config.aws)),
  metrics,
  logger,
})
const server = app.listen(config.port, config.host, () => {
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  logger.info({ port }, 'dashboard listening')
})

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    server.close()
    server.closeAllConnections()
    void events
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0))
  })
}
