import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { NotifyRelay } from './notify-relay.js'

/** A running embedded database and the URL any `pg` client (ours, the dashboard's) uses for it. */
export interface EmbeddedPostgres {
  url: string
  stop(): Promise<void>
}

/**
 * Postgres without a Postgres install: PGlite (Postgres compiled to WebAssembly) keeping its
 * files in `folder`, served over the Postgres wire protocol on 127.0.0.1:`port`, so the very same
 * `pg` code runs against it as against a real server.
 *
 * pglite-socket hands a NOTIFY only to the connection that sent it; the `NotifyRelay` in front
 * passes it on to the others, so the dashboard's LISTEN works as on a real server.
 */
export async function startEmbeddedPostgres(folder: string, port: number): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(folder)
  // pglite-socket on a port of its own; clients reach it through the relay on `port`.
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 16 })
  await server.start()
  const internalPort = (server as unknown as { server: { address(): { port: number } } }).server.address()
    .port
  let relay: NotifyRelay
  try {
    relay = await NotifyRelay.start(internalPort, port)
  } catch (error) {
    // PGLITE_PORT taken, say: release the database files for the next attempt.
    await server.stop()
    await db.close()
    throw error
  }
  return {
    url: `postgres://postgres@127.0.0.1:${relay.port}/postgres?sslmode=disable`,
    async stop() {
      await relay.close()
      await server.stop()
      await db.close()
    },
  }
}
