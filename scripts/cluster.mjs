#!/usr/bin/env node
// `npm run cluster`: a real local cluster to watch edits cross servers. Starts Redis (the servers'
// journal), moto (standing in for DynamoDB and S3: the room registry and the snapshots), three sync servers
// on PORT+1..PORT+3 and a round-robin front proxy on PORT (default 1234). Ctrl-C stops everything: the
// servers first (they save their rooms to S3 and leave the registry), then the proxy, Redis and moto.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { pinnedNodeBinary } from './lib/pinned-node.mjs'
import { prettyLine } from './lib/pretty-log.mjs'
import { startRoundRobinProxy } from './lib/round-robin-proxy.mjs'
import { serverEnv, serverNodeFlags } from './lib/server-node-flags.mjs'
import { startMoto, startRedis } from './lib/services.mjs'

/** Marks the process that runs the cluster, in a process group of its own (see superviseCluster). */
const SUPERVISED = '--supervised'

if (process.argv.includes(SUPERVISED)) await runCluster()
else superviseCluster()

/**
 * Ctrl-C in a terminal signals the whole foreground process group at once: Redis and moto would die
 * while the servers still need them to save their rooms and leave the registry. So the cluster runs in
 * a process group of its own (a detached child), and this process turns Ctrl-C into one orderly stop.
 * Should this process die, the child sees its IPC channel close and stops the cluster the same way.
 * The child runs on the pinned Node (package.json devEngines), as the images do.
 */
function superviseCluster() {
  const child = spawn(pinnedNodeBinary(), [...process.execArgv, fileURLToPath(import.meta.url), SUPERVISED], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    })
  }
  child.once('error', (error) => {
    console.error(`[cluster] could not start: ${error.message}`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
}

async function runCluster() {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const MAIN = fileURLToPath(new URL('../server/dist/main.js', import.meta.url))
  const HOST = '127.0.0.1'
  const TABLE = 'symphony-rooms'
  const BUCKET = 'symphony-snapshots'
  const PREFIX = 'rooms/'
  const REGION = 'us-east-1'
  const SERVER_COUNT = 3

  const log = (message) => console.log(`[cluster] ${message}`)
  const fail = (message) => {
    console.error(`[cluster] ${message}`)
    process.exit(1)
  }

  if (!existsSync(MAIN))
    fail('server/dist/main.js is missing: run `npm run build` first (`npm run cluster` does)')
  const base = process.env.PORT ? Number(process.env.PORT) : 1234
  if (!Number.isInteger(base) || base < 1 || base > 65535 - SERVER_COUNT) {
    fail(
      `PORT: must be a whole number from 1 to ${65535 - SERVER_COUNT} (the proxy's port; the servers use the next ${SERVER_COUNT})`,
    )
  }

  // The emulator takes any credentials; these keep real ones, if any are set, out of its way.
  process.env.AWS_ACCESS_KEY_ID = 'test'
  process.env.AWS_SECRET_ACCESS_KEY = 'test'
  delete process.env.AWS_SESSION_TOKEN
  process.env.AWS_REGION = REGION
  // The SDK's notice that it will need Node 22 from 2027 on, printed by every server: noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
  const authConfigured = ['AUTH', 'AUTH_SECRET', 'AUTH_PUBLIC_KEY', 'AUTH_JWKS_URL'].some(
    (name) => process.env[name],
  )
  const shutdownTimeoutMs = Number(process.env.SHUTDOWN_TIMEOUT_MS) || 25_000

  /** @type {{ id: string, port: number, child: import('node:child_process').ChildProcess, internalAddress?: string, listening: boolean, stopping: boolean }[]} */
  const servers = []
  let proxy
  let redis
  let moto
  let stopping

  const isRunning = (child) => child.exitCode === null && child.signalCode === null

  /** SIGTERM, then SIGKILL if the server outlives its own shutdown timeout; resolves once it exited. */
  function stopServer(server) {
    server.stopping = true
    if (!isRunning(server.child)) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        log(`${server.id} did not exit in time; killing it`)
        server.child.kill('SIGKILL')
      }, shutdownTimeoutMs + 5_000)
      server.child.once('exit', (code, signal) => {
        clearTimeout(timer)
        if (code !== 0 && server.listening)
          log(`${server.id} exited with ${code ?? signal}: rooms may be unsaved, see its log above`)
        resolve()
      })
      server.child.kill('SIGTERM')
    })
  }

  /** Stops whatever has started so far, servers first, then exits with `code`. Safe to call again. */
  function stop(code) {
    stopping ??= (async () => {
      const running = servers.filter((server) => isRunning(server.child))
      if (running.length > 0) log('stopping: the servers save their rooms to S3 and leave the registry')
      await Promise.all(running.map(stopServer))
      await proxy?.close()
      await Promise.allSettled([redis?.stop(), moto?.stop()])
      log('stopped')
      process.exit(code)
    })()
    return stopping
  }

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (stopping) log('still stopping: waiting for the servers to save their rooms')
      stop(0)
    })
  }
  // The supervising process is gone (its terminal closed, or it was killed): stop as after Ctrl-C.
  if (process.send) process.on('disconnect', () => stop(0))

  /** Runs one sync server; resolves once it logs that it listens, rejects if it exits first. */
  function startServer(index, internalPort, sharedEnv) {
    const id = `server-${index + 1}`
    const port = base + index + 1
    const child = spawn(process.execPath, [...serverNodeFlags(process.env.NODE_OPTIONS), MAIN], {
      cwd: root,
      // LOG_LEVEL stays at info at least: the 'listening' line is how this script sees a server is up.
      env: serverEnv({
        ...sharedEnv,
        PORT: String(port),
        INTERNAL_PORT: String(internalPort),
        SERVER_ID: id,
        LOG_LEVEL: ['debug', 'info'].includes(sharedEnv.LOG_LEVEL) ? sharedEnv.LOG_LEVEL : 'info',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const server = { id, port, child, listening: false, stopping: false }
    servers.push(server)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${id} did not listen within 60 s`)), 60_000)
      createInterface({ input: child.stdout }).on('line', (line) => {
        const pretty = prettyLine(line, id)
        console.log(pretty.startsWith(`[${id}]`) ? pretty : `[${id}] ${line}`)
        if (!server.listening && line.includes('"msg":"listening"')) {
          server.listening = true
          server.internalAddress = JSON.parse(line).internalAddress
          clearTimeout(timer)
          resolve(server)
        }
      })
      createInterface({ input: child.stderr }).on('line', (line) => console.error(`[${id}] ${line}`))
      child.once('error', (error) => {
        clearTimeout(timer)
        reject(new Error(`${id} could not start: ${error.message}`))
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`${id} exited with ${code ?? signal} before it was listening`))
        if (!server.listening || server.stopping || stopping) return
        const left = servers.filter((s) => isRunning(s.child)).map((s) => s.id)
        log(
          left.length > 0
            ? `${id} exited unexpectedly (${code ?? signal}); ${left.join(', ')} keep running and the proxy skips ${id}`
            : `${id} exited unexpectedly (${code ?? signal}); no server is left: Ctrl-C stops the rest`,
        )
      })
    })
  }

  try {
    const serverPorts = Array.from({ length: SERVER_COUNT }, (_, i) => base + i + 1)
    // First, so a port already taken (an `npm start` still running?) fails before the slow part.
    proxy = await startRoundRobinProxy({
      port: base,
      host: HOST,
      targets: serverPorts.map((port) => ({ host: HOST, port })),
    }).catch((error) => {
      if (error.code !== 'EADDRINUSE') throw error
      throw new Error(`port ${base} is in use (another cluster or \`npm start\`?); set PORT to pick another`)
    })

    log('starting Redis and moto (S3 + DynamoDB emulator)')
    const [motoStarted, redisStarted] = await Promise.allSettled([startMoto(), startRedis()])
    if (motoStarted.status === 'fulfilled') moto = motoStarted.value
    if (redisStarted.status === 'fulfilled') redis = redisStarted.value
    for (const started of [motoStarted, redisStarted]) if (started.status === 'rejected') throw started.reason
    if (stopping) return

    // Only now that the build is known to exist: the AWS SDK comes with the built server's dependencies.
    const { createAwsClients, createRegistryTable, createSnapshotBucket } = await import('@symphony/server')
    const aws = createAwsClients({ region: REGION, endpoint: moto.endpoint })
    try {
      await createRegistryTable(aws.dynamo, TABLE)
      await createSnapshotBucket(aws.s3, BUCKET)
    } finally {
      aws.dynamo.destroy()
      aws.s3.destroy()
    }
    if (stopping) return

    const sharedEnv = {
      ...process.env,
      HOST,
      INTERNAL_HOST: HOST,
      INTERNAL_TOKEN: randomBytes(16).toString('hex'),
      PUBSUB: redis.url,
      REGISTRY: `dynamodb://${TABLE}`,
      SNAPSHOTS: `s3://${BUCKET}/${PREFIX}`,
      DATABASE_URL: 'none',
      AWS_ENDPOINT_URL: moto.endpoint,
      AWS_REGION: REGION,
      ...(authConfigured ? {} : { AUTH: 'none' }),
    }
    // INTERNAL_PORT=0: each server binds a free port itself and logs the address it got.
    await Promise.all(Array.from({ length: SERVER_COUNT }, (_, i) => startServer(i, 0, sharedEnv)))
    if (stopping) return

    const url = (port) => `http://localhost:${port}/`
    const lines = [
      '',
      `  Symphony cluster is running: ${SERVER_COUNT} sync servers sharing Redis, DynamoDB and S3 (moto).`,
      '',
      `  Front proxy:  ${url(proxy.port)}   open it in two tabs: each tab lands on a different server`,
      '                (round-robin; HTTP responses name the server port in x-symphony-backend)',
      ...servers.map(
        (s) => `  ${s.id}:     ${url(s.port).padEnd(24)} internal endpoint ${s.internalAddress ?? '-'}`,
      ),
      `  One room on two servers: ${url(servers[0].port)}?room=x  and  ${url(servers[1].port)}?room=x`,
      `  Redis:        ${redis.url}   (the journal: every acknowledged edit until a snapshot holds it)`,
      `  moto:         ${moto.endpoint}   (DynamoDB table ${TABLE}, S3 s3://${BUCKET}/${PREFIX})`,
      `  Auth:         ${authConfigured ? 'on' : 'off (AUTH=none; set AUTH_SECRET to turn it on)'}`,
      '  Ctrl-C stops everything.',
      '',
    ]
    console.log(lines.join('\n'))
  } catch (error) {
    if (stopping) return
    console.error(`[cluster] could not start: ${error instanceof Error ? error.message : error}`)
    await stop(1)
  }
}
