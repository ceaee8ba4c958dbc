#!/usr/bin/env node
// `npm start`: the whole system on embedded defaults (no Redis, AWS or Postgres), for trying
// Symphony on one machine. Auth is off unless AUTH_SECRET / AUTH_PUBLIC_KEY / AUTH_JWKS_URL is set.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { prettyLine } from './lib/pretty-log.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const env = { ...process.env }
const authConfigured = ['AUTH', 'AUTH_SECRET', 'AUTH_PUBLIC_KEY', 'AUTH_JWKS_URL'].some((name) => env[name])
if (!authConfigured) env.AUTH = 'none'

const server = spawn(process.execPath, [fileURLToPath(new URL('../server/dist/main.js', import.meta.url))], {
  cwd: root,
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
})
createInterface({ input: server.stdout }).on('line', (line) => {
  console.log(prettyLine(line, 'sync'))
  if (line.includes('"msg":"listening"')) {
    const { port } = JSON.parse(line)
    console.log(`\n  Symphony is running.`)
    console.log(
      `  Whiteboard demo: http://localhost:${port}/   (open it in two tabs; ?room=<name> picks a room)`,
    )
    console.log(`  WebSocket:       ws://localhost:${port}/<room>`)
    console.log(`  Health/metrics:  http://localhost:${port}/healthz  http://localhost:${port}/metrics`)
    const database = env.DATABASE_URL ?? 'pglite://./data/pg'
    const metadata = database.startsWith('pglite://')
      ? `PGlite in ${database.slice('pglite://'.length)}, served at postgres://postgres@127.0.0.1:${env.PGLITE_PORT ?? 5433}/postgres`
      : database === 'none'
        ? 'not kept (DATABASE_URL=none)'
        : 'in DATABASE_URL'
    console.log(`  Metadata:        ${metadata}`)
    console.log(
      `  Auth:            ${env.AUTH === 'none' ? 'off (AUTH=none; set AUTH_SECRET to turn it on)' : 'on'}`,
    )
    console.log('  Ctrl-C stops everything.\n')
  }
})

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill('SIGTERM'))
server.on('exit', (code) => process.exit(code ?? 1))
