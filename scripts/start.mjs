#!/usr/bin/env node
// `npm start`: the whole system on embedded defaults (no Redis, AWS or Postgres), for trying
// Symphony on one machine: the sync server, and the dashboard reading the metadata the server
// keeps in embedded PGlite. Auth is off unless AUTH_SECRET / AUTH_PUBLIC_KEY / AUTH_JWKS_URL is set.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { runOnPinnedNode } from './lib/pinned-node.mjs'
import { prettyLine } from './lib/pretty-log.mjs'
import { serverEnv, serverNodeFlags } from './lib/server-node-flags.mjs'

// The server runs on the Node the images ship (package.json devEngines), whatever this machine's is.
await runOnPinnedNode(import.meta.url)

const root = fileURLToPath(new URL('..', import.meta.url))
const env = { ...process.env }
const authConfigured = ['AUTH', 'AUTH_SECRET', 'AUTH_PUBLIC_KEY', 'AUTH_JWKS_URL'].some((name) => env[name])
if (!authConfigured) env.AUTH = 'none'
// With a secret, the demo gets its tokens from the development route (never in a deployment).
if (env.AUTH_SECRET && env.DEV_TOKEN_ROUTE === undefined) env.DEV_TOKEN_ROUTE = '1'
// The dashboard reads live rooms from the server's internal endpoint (advertised on loopback): open
// it with a token made up for this run (unless the environment chose its own).
env.INTERNAL_TOKEN ??= randomBytes(24).toString('hex')
// The REST API, with a secret made up for this run and printed below (unless one is given).
env.API_SECRET ??= randomBytes(24).toString('hex')
env.INTERNAL_PORT ??= '0'
env.INTERNAL_HOST ??= '127.0.0.1'

const database = env.DATABASE_URL ?? 'pglite://./data/pg'
const children = new Set()

function run(script, name, childEnv, onLine, nodeFlags = []) {
  const child = spawn(process.execPath, [...nodeFlags, fileURLToPath(new URL(script, import.meta.url))], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.add(child)
  createInterface({ input: child.stdout }).on('line', (line) => {
    console.log(prettyLine(line, name))
    onLine(line)
  })
  child.on('exit', (code) => {
    children.delete(child)
    // One part gone means the system is not whole: stop the other, exit with the first code.
    for (const other of children) other.kill('SIGTERM')
    if (children.size === 0) process.exit(code ?? 1)
  })
  return child
}

/** The dashboard, once the database it reads is up. */
function startDashboard(databaseUrl) {
  // Loopback unless told otherwise: without DASHBOARD_TOKEN it shows every room to whoever reaches it.
  const dashboardEnv = {
    ...env,
    DATABASE_URL: databaseUrl,
    DASHBOARD_HOST: env.DASHBOARD_HOST ?? '127.0.0.1',
  }
  run('../dashboard-server/dist/main.js', 'dash', dashboardEnv, (line) => {
    if (!line.includes('"msg":"dashboard listening"')) return
    const { port } = JSON.parse(line)
    console.log(`\n  Dashboard:       http://localhost:${port}/   (rooms, connections and documents, live)\n`)
  })
}

run(
  '../server/dist/main.js',
  'sync',
  serverEnv(env),
  (line) => {
    if (line.includes('"msg":"embedded Postgres (PGlite) serving"')) startDashboard(JSON.parse(line).url)
    if (line.includes('"msg":"listening"') && /^postgres(ql)?:/.test(database)) startDashboard(database)
    if (line.includes('"msg":"listening"')) {
      const { port } = JSON.parse(line)
      console.log(`\n  Symphony is running.`)
      console.log(
        `  Whiteboard demo: http://localhost:${port}/   (open it in two tabs; ?room=<name> picks a room)`,
      )
      console.log(`  React example:   http://localhost:${port}/react   (a shared to-do list with presence)`)
      console.log(`  WebSocket:       ws://localhost:${port}/<room>`)
      console.log(`  REST API:        http://localhost:${port}/api/v1/rooms/<room>/document`)
      console.log(`                   (Authorization: Bearer ${env.API_SECRET})`)
      console.log(`  Health/metrics:  http://localhost:${port}/healthz  http://localhost:${port}/metrics`)
      const metadata = database.startsWith('pglite://')
        ? `PGlite in ${database.slice('pglite://'.length)}, served at postgres://postgres@127.0.0.1:${env.PGLITE_PORT ?? 5433}/postgres`
        : database === 'none'
          ? 'not kept (DATABASE_URL=none), so no dashboard'
          : 'in DATABASE_URL'
      console.log(`  Metadata:        ${metadata}`)
      console.log(
        `  Auth:            ${env.AUTH === 'none' ? 'off (AUTH=none; set AUTH_SECRET to turn it on)' : 'on'}`,
      )
      if (env.DEV_TOKEN_ROUTE === '1') {
        console.log(
          `  Dev tokens:      http://localhost:${port}/dev/token?room=<room>   (development only: the demo's tokens)`,
        )
      }
      console.log('  Ctrl-C stops everything.\n')
    }
  },
  serverNodeFlags(env.NODE_OPTIONS),
)

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    // Windows has no SIGTERM: kill() ends a process at once, unsaved. Ctrl-C reaches the children
    // there too (one console), and they save and stop on their own.
    if (process.platform === 'win32' && signal === 'SIGINT') return
    for (const child of children) child.kill('SIGTERM')
  })
}
