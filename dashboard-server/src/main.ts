import pg from 'pg'
import { createDashboardApp } from './app.js'
import { parseDashboardConfig } from './config.js'
import { LiveEvents } from './live-events.js'
import { MetadataQueries } from './queries.js'

let config: ReturnType<typeof parseDashboardConfig>
try {
  config = parseDashboardConfig(process.env)
} catch (error) {
  console.error(`dashboard: bad configuration: ${(error as Error).message}`)
  process.exit(1)
}
if (!config.token)
  console.warn('dashboard: DASHBOARD_TOKEN is not set: the API is open to anyone who can reach it')

const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 8, connectionTimeoutMillis: 5_000 })
pool.on('error', (error) => console.warn(`dashboard: database connection lost: ${error.message}`))
const queries = new MetadataQueries(pool)
const events = new LiveEvents(config.databaseUrl, queries, (message) => console.warn(`dashboard: ${message}`))
await events.start()
const app = createDashboardApp({ queries, events, token: config.token })
const server = app.listen(config.port, config.host, () => {
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  console.log(JSON.stringify({ msg: 'dashboard listening', port }))
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
