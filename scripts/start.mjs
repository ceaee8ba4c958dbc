#!/usr/bin/env node
// `npm start`: the whole system on embedded defaults (no Redis, AWS or Postgres), for trying
// Symphony on one machine. Auth is off unless AUTH_SECRET / AUTH_PUBLIC_KEY / AUTH_JWKS_URL is set.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const env = { ...process.env }
const authConfigured = ['AUTH', 'AUTH_SECRET', 'AUTH_PUBLIC_KEY', 'AUTH_JWKS_URL'].some((name) => env[name])
if (!authConfigured) env.AUTH = 'none'

const LEVELS = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' }
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'serverId'])

/** Prints the server's JSON log lines as short human lines. */
function prettyLine(line) {
  let entry
  try {
    entry = JSON.parse(line)
  } catch {
    return line
  }
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'object' ? JSON.stringify(value) : value}`)
  return `[sync] ${LEVELS[entry.level] ?? entry.level} ${entry.msg ?? ''} ${fields.join(' ')}`.trimEnd()
}

const server = spawn(process.execPath, [fileURLToPath(new URL('../server/dist/main.js', import.meta.url))], {
  cwd: root,
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
})
createInterface({ input: server.stdout }).on('line', (line) => {
  console.log(prettyLine(line))
  if (line.includes('"msg":"listening"')) {
    const { port } = JSON.parse(line)
    console.log(`\n  Symphony is running.`)
    console.log(
      `  Whiteboard demo: http://localhost:${port}/   (open it in two tabs; ?room=<name> picks a room)`,
    )
    console.log(`  WebSocket:       ws://localhost:${port}/<room>`)
    console.log(`  Health/metrics:  http://localhost:${port}/healthz  http://localhost:${port}/metrics`)
    console.log(
      `  Auth:            ${env.AUTH === 'none' ? 'off (AUTH=none; set AUTH_SECRET to turn it on)' : 'on'}`,
    )
    console.log('  Ctrl-C stops everything.\n')
  }
})

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill('SIGTERM'))
server.on('exit', (code) => process.exit(code ?? 1))
