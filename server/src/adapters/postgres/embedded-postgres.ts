import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

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
 * Known limit: pglite-socket multiplexes every wire connection onto PGlite's one session and
 * hands a NOTIFY only to the connection that sent it, so LISTEN on another connection never
 * fires (checked with pglite-socket 0.2.17).
 */
export async function startEmbeddedPostgres(folder: string, port: number): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(folder)
  const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: 16 })
  await server.start()
  const address = (server as unknown as { server: { address(): { port: number } } }).server.address()
  return {
    url: `postgres://postgres@127.0.0.1:${address.port}/postgres`,
    async stop() {
      await server.stop()
      await db.close()
    },
  }
}
