import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { connectDatabase, type DatabaseConnection } from '../../src/adapters/postgres/connect.js'
import { PgMetadataSink, type PgMetadataSinkOptions } from '../../src/adapters/postgres/pg-metadata-sink.js'
import { silentLogger } from '../../src/logger.js'
import { requireTestServices, uniqueName } from './services.js'

/**
 * A pool on the test Postgres whose tables live in a schema of its own, so test files (running
 * concurrently) never see each other's metadata.
 */
export async function connectIsolatedDatabase(): Promise<DatabaseConnection> {
  return connectDatabase({ kind: 'postgres', url: await isolatedDatabaseUrl() }, silentLogger)
}

/** A URL of the test Postgres whose tables live in a new schema of their own (`DATABASE_URL`). */
export async function isolatedDatabaseUrl(): Promise<string> {
  const schema = uniqueName('t').replaceAll('-', '_')
  const admin = new pg.Client(requireTestServices().databaseUrl)
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  await admin.end()
  const url = new URL(requireTestServices().databaseUrl)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

/** A metadata database a test opens and cleans up after. */
export type TestDatabase = DatabaseConnection & { cleanup(): void }

/** Every backend the Postgres metadata code runs against, for suites looped over them. */
export const METADATA_BACKENDS: { name: string; open(): Promise<TestDatabase> }[] = [
  {
    name: 'real PostgreSQL',
    open: async () => ({ ...(await connectIsolatedDatabase()), cleanup() {} }),
  },
  {
    name: 'PGlite over the wire protocol',
    open: async () => {
      const folder = mkdtempSync(join(tmpdir(), 'symphony-pglite-'))
      const connection = await connectDatabase({ kind: 'pglite', folder, port: 0 }, silentLogger)
      return { ...connection, cleanup: () => rmSync(folder, { recursive: true, force: true }) }
    },
  },
]

/**
 * A metadata sink for `serverId` on `database`: a pool the test keeps (never closed by the sink),
 * or a URL it connects to. Writes every 50 ms unless `options` say otherwise.
 */
export function testMetadataSink(
  serverId: string,
  database: pg.Pool | string,
  options: Partial<PgMetadataSinkOptions> = {},
): PgMetadataSink {
  return new PgMetadataSink({
    serverId,
    address: '127.0.0.1:0',
    connect:
      typeof database === 'string'
        ? () => connectDatabase({ kind: 'postgres', url: database }, silentLogger)
        : async () => ({ pool: database, close: async () => {} }),
    logger: silentLogger,
    flushIntervalMs: 50,
    ...options,
  })
}
