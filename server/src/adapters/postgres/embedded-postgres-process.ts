/**
 * The embedded database's own process: PGlite (Postgres compiled to WebAssembly) runs queries
 * synchronously, so inside the sync server every metadata batch would stall the event loop and its
 * WASM heap would sit in the server's memory. Here it is a child of the server, reached over the
 * Postgres wire protocol like RDS in production.
 *
 * Started by `startEmbeddedPostgres` with an IPC channel: it sends `{ url }` (or `{ error }`) once,
 * and stops cleanly when that channel closes: the parent stopping it, or the parent gone, so a
 * crashed server never leaves a database holding the folder. Ctrl-C in a terminal (or `timeout`)
 * signals the whole process group at once: the database then waits up to `SIGNAL_GRACE_MS` for
 * its parent, which still writes its last metadata while it shuts down.
 */
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { NotifyRelay } from './notify-relay.js'

export type EmbeddedPostgresMessage = { url: string } | { error: string }

const [folder = 'memory://', portText = '0'] = process.argv.slice(2)
const SIGNAL_GRACE_MS = 15_000

async function serve(): Promise<() => Promise<void>> {
  const db = await PGlite.create(folder)
  // pglite-socket on a port of its own; clients reach it through the relay on the given port.
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 16 })
  await server.start()
  const internalPort = (server as unknown as { server: { address(): { port: number } } }).server.address()
    .port
  let relay: NotifyRelay
  try {
    relay = await NotifyRelay.start(internalPort, Number(portText))
  } catch (error) {
    // The port taken, say: release the database files for the next attempt.
    await server.stop()
    await db.close()
    throw error
  }
  report({ url: `postgres://postgres@127.0.0.1:${relay.port}/postgres?sslmode=disable` })
  return async () => {
    await relay.close()
    await server.stop()
    await db.close()
  }
}

/** Sends `message` to the parent; `then` runs once it is handed over (IPC sends are asynchronous). */
function report(message: EmbeddedPostgresMessage, then: () => void = () => {}): void {
  if (process.send) process.send(message, undefined, {}, () => then())
  else then()
}

let stopping = false
function stopWith(stop: () => Promise<void>): void {
  if (stopping) return
  stopping = true
  stop().then(
    () => process.exit(0),
    () => process.exit(1),
  )
}

serve().then(
  (stop) => {
    process.on('disconnect', () => stopWith(stop))
    const afterGrace = () => setTimeout(() => stopWith(stop), SIGNAL_GRACE_MS).unref()
    process.on('SIGTERM', afterGrace)
    process.on('SIGINT', afterGrace)
  },
  (error: Error) => report({ error: error.message }, () => process.exit(1)),
)
