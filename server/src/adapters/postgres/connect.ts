import pg from 'pg'
import type { DatabaseConfig } from '../../backends.js'
import type { Logger } from '../../logger.js'
import { startEmbeddedPostgres } from './embedded-postgres.js'

export interface DatabaseConnection {
  /** What other clients (the dashboard, psql) connect to. */
  url: string
  pool: pg.Pool
  close(): Promise<void>
}

/** A pool that never hangs a flush for long and never crashes the process on a dropped idle client. */
export function createPool(url: string, logger: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    connectionTimeoutMillis: 5_000,
    query_timeout: 10_000,
    idleTimeoutMillis: 30_000,
  })
  pool.on('error', (error) => logger.warn({ err: error }, 'metadata database connection lost'))
  return pool
}

/** Opens the configured database; for PGlite this starts the embedded database's process first. */
export async function connectDatabase(config: DatabaseConfig, logger: Logger): Promise<DatabaseConnection> {
  if (config.kind === 'postgres') {
    const pool = createPool(config.url, logger)
    return { url: config.url, pool, close: () => pool.end() }
  }
  const embedded = await startEmbeddedPostgres(config.folder, config.port)
  logger.info(
    { url: embedded.url, folder: config.folder, pid: embedded.pid },
    'embedded Postgres (PGlite) serving',
  )
  let closing = false
  void embedded.exited.then(() => {
    // Metadata queues (bounded) and the writes retry; sync goes on without it.
    if (!closing) logger.error({ pid: embedded.pid }, 'embedded Postgres (PGlite) process exited')
  })
  const pool = createPool(embedded.url, logger)
  return {
    url: embedded.url,
    pool,
    async close() {
      closing = true
      await pool.end()
      await embedded.stop()
    },
  }
}
