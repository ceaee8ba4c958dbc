import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { serverEnv, serverNodeFlags } from '@symphony/dev-scripts/server-node-flags'
import { freePort } from '@symphony/dev-scripts/services'
import type { Placement } from '../virtual-users/room-run.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))

/** A sync server this process started, on loopback. */
export interface StartedServer {
  name: string
  /** What the generator connects to; a room's URL is this plus `/<room>`. */
  url: string
  /** Several servers (a cluster): the generator places users on these, `placement` says how. */
  urls?: string[]
  placement?: Placement
  pid: number
  /** Every server's process, when there are several. */
  pids?: number[]
  /** Processes beside the server that a deployment runs elsewhere (an embedded database, Redis). */
  helperPids?: number[]
  stop(): Promise<void>
}

export interface StartOptions {
  /** Pin the server to these CPUs with taskset (e.g. "0"). */
  cpus?: string | undefined
  env?: Record<string, string>
  /** Ready once listening, not once the metadata schema is migrated (another server migrated it). */
  readyOnListening?: boolean
  /** Node flags on top of `npm start`'s (those NODE_OPTIONS may not carry, e.g. `--cpu-prof`). */
  nodeFlags?: string[]
}

/** Our server in embedded mode (memory registry, file snapshots and journal, PGlite), auth off unless `env` sets it. */
export async function startSymphony(options: StartOptions = {}): Promise<StartedServer> {
  const data = mkdtempSync(join(tmpdir(), 'symphony-bench-'))
  const env = {
    ...(options.env?.AUTH_SECRET ? {} : { AUTH: 'none' }),
    PORT: '0',
    HOST: '127.0.0.1',
    PGLITE_PORT: '0',
    SNAPSHOTS: `file://${join(data, 'snapshots')}`,
    JOURNAL: `file://${join(data, 'journal')}`,
    DATABASE_URL: `pglite://${join(data, 'pg')}`,
    ...options.env,
    LOG_LEVEL: 'info', // readiness is read from the log
  }
  // With the V8 flags and malloc setting `npm start` gives it (unless the environment has its own).
  const flags = serverNodeFlags(options.env?.NODE_OPTIONS ?? process.env.NODE_OPTIONS)
  const child = launch(
    join(root, 'server/dist/main.js'),
    serverEnv({ ...process.env, ...env }),
    options.cpus,
    [...flags, ...(options.nodeFlags ?? [])],
  )
  // Listening comes first; with a metadata database, wait for its migration too, so a run does
  // not measure the server's start-up.
  const ready =
    env.DATABASE_URL === 'none' || options.readyOnListening
      ? '"msg":"listening"'
      : '"msg":"metadata schema migrated"'
  let port = 0
  const helperPids: number[] = []
  await waitForLine(child, (line) => {
    if (line.includes('"msg":"listening"')) port = (JSON.parse(line) as { port: number }).port
    // The embedded database runs in a process of its own.
    if (line.includes('"msg":"embedded Postgres (PGlite) serving"'))
      helperPids.push((JSON.parse(line) as { pid: number }).pid)
    return line.includes(ready) ? true : null
  })
  const server = started('symphony', child, port, () => rmSync(data, { recursive: true, force: true }))
  return { ...server, helperPids }
}

/** The y-websocket 1.5.4 reference server (its bin/server.js, in-memory documents). */
export function startReference(options: StartOptions = {}): Promise<StartedServer> {
  return startNodePeer(
    'y-websocket 1.5.4',
    join(root, 'node_modules/y-websocket-reference/bin/server.js'),
    options,
  )
}

/** @y/websocket-server 0.1.1, y-websocket's successor (its bin, in-memory documents). */
export function startYWebsocketServer(options: StartOptions = {}): Promise<StartedServer> {
  const script = join(root, 'node_modules/@y/websocket-server/src/server.js')
  return startNodePeer('@y/websocket-server 0.1.1', script, options)
}

/** Hocuspocus 4.7.0 with no extensions (documents in memory); it speaks its own framing. */
export function startHocuspocus(options: StartOptions = {}): Promise<StartedServer> {
  // The built script, also when this module runs from source (the tests).
  const script = join(root, 'loadtest/dist/bench/hocuspocus-server.js')
  return startNodePeer('hocuspocus 4.7.0', script, options)
}

/** A Node peer's script on HOST and PORT, ready when it prints "running at". */
async function startNodePeer(name: string, script: string, options: StartOptions): Promise<StartedServer> {
  const port = await freePort()
  const child = launch(script, { HOST: '127.0.0.1', PORT: String(port), ...options.env }, options.cpus)
  await waitForLine(child, (line) => (line.startsWith('running at') ? port : null))
  return started(name, child, port, () => {})
}

export const Y_SWEET_VERSION = '0.9.1'

/**
 * y-sweet (Rust: yrs and tokio) from crates.io, built once with `cargo install --locked` into a
 * cache folder kept between runs, serving a file store with its default 10 s checkpoints and no
 * auth. Rooms are at `/doc/ws/<room>`. Throws with the reason when it cannot be built or started.
 */
export async function startYSweet(options: StartOptions = {}): Promise<StartedServer> {
  const binary = ySweetBinary()
  const port = await freePort()
  const store = mkdtempSync(join(tmpdir(), 'symphony-bench-ysweet-'))
  const args = ['serve', store, '--port', String(port), '--host', '127.0.0.1']
  const child = options.cpus
    ? spawn('taskset', ['-c', options.cpus, binary, ...args], spawnOptions(options.env))
    : spawn(binary, args, spawnOptions(options.env))
  await waitForLine(child, (line) => (line.includes('Listening on') ? port : null))
  const server = started(`y-sweet ${Y_SWEET_VERSION}`, child, port, () =>
    rmSync(store, { recursive: true, force: true }),
  )
  return { ...server, url: `${server.url}/doc/ws` }
}

/** The cached y-sweet binary, built first when missing (a few minutes on two cores). */
function ySweetBinary(): string {
  const cache = process.env.SYMPHONY_BENCH_CACHE ?? join(homedir(), '.cache', 'symphony-bench')
  const folder = join(cache, `y-sweet-${Y_SWEET_VERSION}`)
  const binary = join(folder, 'bin', 'y-sweet')
  if (existsSync(binary)) return binary
  console.log(`bench: building y-sweet ${Y_SWEET_VERSION} with cargo into ${folder} (once)`)
  try {
    execFileSync(
      'cargo',
      ['install', 'y-sweet', '--version', Y_SWEET_VERSION, '--locked', '--root', folder],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '')
    const last = stderr.trim().split('\n').slice(-3).join(' / ')
    throw new Error(`cargo install y-sweet@${Y_SWEET_VERSION} failed: ${last || (error as Error).message}`)
  }
  return binary
}

/** CPU 0 for the server and CPU 1 for the generator, when taskset and a second core exist. */
export function cpuPinning(): { server: string; generator: string } | null {
  return hasTaskset() && availableParallelism() >= 2 ? { server: '0', generator: '1' } : null
}

/** Moves a running process (and its threads) onto these CPUs. */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' })
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

function launch(
  script: string,
  env: NodeJS.ProcessEnv,
  cpus: string | undefined,
  nodeFlags: readonly string[] = [],
): ChildProcess {
  const command = cpus ? 'taskset' : process.execPath
  const args = cpus ? ['-c', cpus, process.execPath, ...nodeFlags, script] : [...nodeFlags, script]
  // taskset execs node in place, so the child's pid is the server's.
  return spawn(command, args, spawnOptions(env))
}

function spawnOptions(env: NodeJS.ProcessEnv = {}) {
  return { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[] }
}

function started(name: string, child: ChildProcess, port: number, cleanUp: () => void): StartedServer {
  return {
    name,
    url: `ws://127.0.0.1:${port}`,
    pid: child.pid ?? 0,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      cleanUp()
    },
  }
}

const START_TIMEOUT_MS = 60_000

/** Resolves with `pick`'s first non-null answer over the child's output lines; rejects if it exits or stalls first. */
function waitForLine<T>(child: ChildProcess, pick: (line: string) => T | null): Promise<T> {
  return new Promise((resolve, reject) => {
    const output: string[] = []
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server not ready after ${START_TIMEOUT_MS / 1000} s:\n${output.join('\n')}`))
    }, START_TIMEOUT_MS)
    const keep = (line: string) => output.push(line) > 50 && output.shift()
    const onLine = (line: string) => {
      keep(line)
      const value = pick(line)
      if (value === null) return
      clearTimeout(timer)
      resolve(value)
    }
    if (child.stdout) createInterface({ input: child.stdout }).on('line', onLine)
    if (child.stderr) createInterface({ input: child.stderr }).on('line', keep)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited (${code}) before listening:\n${output.join('\n')}`))
    })
  })
}

/** Below the ephemeral range, so nothing else takes it before the server listens (see services.mjs). */
export { freePort }
