// Starts the real services the tests need as child processes on free loopback ports: Redis, Postgres,
// and moto standing in for S3 and DynamoDB. Missing ones are installed first (redis-server and
// postgresql from Debian, moto into a Python venv under .services/, cfn-lint beside it). The children die with this process: an exit hook kills them.
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createConnection, createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { debianPostgresBin, ensureDebianPackage } from './debian-package.mjs'

/** @import { ChildProcess, SpawnOptions } from 'node:child_process' */
/** @import { AddressInfo } from 'node:net' */

/**
 * A test's own redis-server. `pid` is the running process's (it changes with `restart()`); `start()`
 * starts it again on the same port after `stop()`.
 * @typedef {{
 *   url: string,
 *   port: number,
 *   readonly pid: number,
 *   restart(): Promise<void>,
 *   start(): Promise<void>,
 *   stop(): Promise<void>,
 * }} RedisService
 */
/**
 * moto's server (S3, DynamoDB and the rest on one port). `pid`: a test may SIGSTOP it to stall them.
 * @typedef {{ endpoint: string, port: number, pid: number, stop(): Promise<void> }} MotoService
 */
/**
 * A throwaway PostgreSQL cluster. `pid` is the postmaster's (each connection gets a child process of it).
 * @typedef {{ url: string, port: number, pid: number, stop(): Promise<void> }} PostgresService
 */

const root = fileURLToPath(new URL('../..', import.meta.url))
const HOST = '127.0.0.1'

/**
 * Absolute path of the redis-server binary the tests use (Debian's package).
 * @type {string}
 */
export const REDIS_SERVER = '/usr/bin/redis-server'

const VENV = join(root, '.services', 'venv')
const MOTO_SERVER = join(VENV, 'bin', 'moto_server')
// What runs: moto's server with S3's conditional writes made atomic, as S3's are (see the script).
const MOTO_LAUNCHER = fileURLToPath(new URL('moto-server.py', import.meta.url))
// Written once pip has finished, so an install cut short is redone rather than half used.
const MOTO_INSTALLED = join(VENV, '.moto-installed')

// Every child still running; the exit hook kills them synchronously, whatever way this process ends.
/** @type {Set<ChildProcess>} */
const children = new Set()
let exitHookInstalled = false

/** @param {ChildProcess} child */
function track(child) {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on('exit', () => {
      for (const running of children) {
        try {
          running.kill('SIGKILL')
        } catch {}
      }
    })
  }
  children.add(child)
  child.once('exit', () => children.delete(child))
  child.once('error', () => children.delete(child))
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A port nothing listens on, for a server started a moment later (or restarted on the same port).
 * Taken below the kernel's ephemeral range where there is room, so no port-0 listener or outgoing
 * connection of another test can be handed it in between (EADDRINUSE).
 * @returns {Promise<number>}
 */
export async function freePort() {
  const range = portsBelowEphemeral()
  for (let attempt = 0; range && attempt < 50; attempt++) {
    const port = range.low + Math.floor(Math.random() * (range.high - range.low + 1))
    if (await listenOnce(port).catch(() => null)) return port
  }
  return listenOnce(0)
}

/** 10000 up to the ephemeral range's start (Linux), or null when that leaves too few. */
function portsBelowEphemeral() {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return low > 12_000 ? { low: 10_000, high: low - 1 } : null
  } catch {
    return null
  }
}

/**
 * Listens on `port` (0: any), closes, and resolves to the port it had.
 * @param {number} port
 * @returns {Promise<number>}
 */
function listenOnce(port) {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(port, HOST, () => {
      const address = /** @type {AddressInfo} */ (server.address())
      server.close(() => resolve(address.port))
    })
  })
}

/**
 * Spawns a long-running service. Its output is kept (the last few KiB) for error messages, not printed.
 * The child is unref'd, so a caller that forgets stop() still exits, and the exit hook kills it.
 * @param {string} command
 * @param {string[]} args
 * @param {SpawnOptions} [options]
 */
function launch(command, args, options = {}) {
  const child = spawn(command, args, {
    cwd: root,
    ...options,
    detached: false,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (/** @type {Buffer} */ chunk) => {
    output = (output + chunk).slice(-4000)
  }
  // Both piped (stdio above); their sockets are unref'd so they do not keep this process alive.
  const stdout = /** @type {import('node:net').Socket} */ (child.stdout)
  const stderr = /** @type {import('node:net').Socket} */ (child.stderr)
  stdout.on('data', keep)
  stderr.on('data', keep)
  stdout.unref?.()
  stderr.unref?.()
  child.unref()
  /** @type {Error | undefined} */
  let failure
  child.once('error', (error) => {
    failure = error
  })
  track(child)
  return {
    child,
    /** Why the child is gone (an Error), or undefined while it runs. @type {() => Error | undefined} */
    gone: () =>
      failure ??
      (child.exitCode !== null || child.signalCode !== null
        ? new Error(`exited with ${child.exitCode ?? child.signalCode}`)
        : undefined),
    output: () => output.trim(),
  }
}

/**
 * Polls `ready()` until it is true; fails when the child dies or `timeoutMs` passes.
 * @param {string} name
 * @param {ReturnType<typeof launch>} launched
 * @param {() => Promise<boolean>} ready
 * @param {number} timeoutMs
 */
async function waitReady(name, launched, ready, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const gone = launched.gone()
    if (gone) throw new Error(`${name} ${gone.message} before it was ready:\n${launched.output()}`)
    if (await ready()) return
    if (Date.now() > deadline) {
      await stopChild(launched.child)
      throw new Error(`${name} not ready after ${timeoutMs} ms:\n${launched.output()}`)
    }
    await sleep(50)
  }
}

/**
 * `signal`, then SIGKILL if the child is still there after `graceMs`; resolves once it has exited.
 * @param {ChildProcess} child
 * @param {number} [graceMs]
 * @param {NodeJS.Signals} [signal]
 * @returns {Promise<void>}
 */
function stopChild(child, graceMs = 5000, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null || !children.has(child)) return Promise.resolve()
  return new Promise((resolve) => {
    // This timer is ref'd: it keeps the event loop alive while waiting on the unref'd child.
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill(signal)
  })
}

/**
 * Sends one inline Redis command; resolves with the reply's first bytes, or '' when nothing answers.
 * @param {number} port
 * @param {string} command
 * @returns {Promise<string>}
 */
function redisCommand(port, command, timeoutMs = 1000) {
  return new Promise((resolve) => {
    let reply = ''
    const socket = createConnection({ host: HOST, port })
    const done = (/** @type {string} */ value) => {
      socket.destroy()
      resolve(value)
    }
    socket.setTimeout(timeoutMs, () => done(reply))
    socket.once('error', () => done(reply))
    socket.once('close', () => resolve(reply))
    socket.once('connect', () => socket.write(`${command}\r\n`))
    socket.on('data', (chunk) => {
      reply += chunk
      if (reply.includes('\r\n')) done(reply)
    })
  })
}

/**
 * Starts redis-server (installing Debian's package when missing) on a free loopback port, without
 * persistence. `restart()` stops it and starts it again on the same port.
 * @returns {Promise<RedisService>}
 */
export async function startRedis() {
  ensureDebianPackage('redis-server', REDIS_SERVER)
  const port = await freePort()
  /** @type {ReturnType<typeof launch>} */
  let launched

  async function start() {
    launched = launch(REDIS_SERVER, [
      '--port',
      String(port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
    ])
    await waitReady(
      `redis-server on port ${port}`,
      launched,
      async () => (await redisCommand(port, 'PING')).startsWith('+PONG'),
      15_000,
    )
  }

  async function stop() {
    await stopChild(launched.child)
    // A test may have shut our Redis down and started its own on this port: do not leave that behind.
    if ((await redisCommand(port, 'PING', 300)).startsWith('+PONG')) {
      await redisCommand(port, 'SHUTDOWN NOSAVE', 2000)
    }
  }

  await start()
  return {
    url: `redis://${HOST}:${port}`,
    port,
    /** The running redis-server's process id (it changes with `restart()`). */
    get pid() {
      return /** @type {number} */ (launched.child.pid) // set: waitReady saw it running
    },
    async restart() {
      await stop()
      await start()
    },
    /** Starts it again on the same port after `stop()`: an outage of a chosen length. Empty, like any start. */
    start,
    stop,
  }
}

/**
 * Runs a command to completion, its output shown; rejects when it fails.
 * @param {string} command
 * @param {string[]} args
 * @param {SpawnOptions & { quiet?: boolean }} [options]
 * @returns {Promise<void>}
 */
function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: root,
      ...options,
      detached: false,
      stdio: ['ignore', options.quiet ? 'ignore' : 'inherit', 'inherit'],
    })
    track(child)
    child.once('error', reject)
    child.once('exit', (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}`)),
    )
  })
}

/**
 * What `pip install` puts into .services/venv, by name: the requirement, the command it must leave
 * behind, and a marker written once pip has finished (an install cut short is redone, not half used).
 * cfn-lint is pinned: a new release's rules would otherwise fail the infra tests on their own.
 */
const PIP_TOOLS = {
  moto: { requirement: 'moto[server]', binary: MOTO_SERVER, marker: MOTO_INSTALLED },
  'cfn-lint': {
    requirement: 'cfn-lint==1.58.0',
    binary: join(VENV, 'bin', 'cfn-lint'),
    marker: join(VENV, '.cfn-lint-1.58.0-installed'),
  },
}

/** The cfn-lint command in .services/venv (`ensureCfnLint` installs it). */
export const CFN_LINT = PIP_TOOLS['cfn-lint'].binary

/** @type {Map<keyof typeof PIP_TOOLS, Promise<void>>} */
const pipInstalls = new Map()

/**
 * Makes sure .services/venv holds the tool; the first run installs it from PyPI.
 * @param {keyof typeof PIP_TOOLS} name
 * @returns {Promise<void>}
 */
function ensurePipTool(name) {
  const { requirement, binary, marker } = PIP_TOOLS[name]
  if (!pipInstalls.has(name)) {
    const install = (async () => {
      if (existsSync(binary) && existsSync(marker)) return
      const started = Date.now()
      console.log(`[services] installing ${requirement} into .services/venv (first run only)`)
      if (!existsSync(join(VENV, 'bin', 'pip'))) {
        mkdirSync(join(root, '.services'), { recursive: true })
        rmSync(VENV, { recursive: true, force: true })
        try {
          await run('python3', ['-m', 'venv', VENV])
        } catch {
          // A bare Debian has python3 without the venv module: install it, then use Debian's python3.
          ensureDebianPackage('python3', '/usr/bin/python3')
          ensureDebianPackage('python3-venv', '/usr/share/doc/python3-venv/copyright')
          rmSync(VENV, { recursive: true, force: true })
          await run('/usr/bin/python3', ['-m', 'venv', VENV])
        }
      }
      await run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', requirement])
      if (!existsSync(binary)) throw new Error(`installed ${requirement} but ${binary} is missing`)
      writeFileSync(marker, `${new Date().toISOString()}\n`)
      console.log(`[services] installed ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    })()
    install.catch(() => pipInstalls.delete(name))
    pipInstalls.set(name, install)
  }
  return /** @type {Promise<void>} */ (pipInstalls.get(name))
}

const ensureMoto = () => ensurePipTool('moto')

/** Makes sure .services/venv holds the pinned cfn-lint (the CloudFormation linter the infra tests run). */
export const ensureCfnLint = () => ensurePipTool('cfn-lint')

/**
 * Resolves true when anything answers HTTP on the port.
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function httpAnswers(port) {
  return new Promise((resolve) => {
    const req = request({ host: HOST, port, path: '/moto-api/', timeout: 1000 }, (res) => {
      res.resume()
      resolve(true)
    })
    req.once('timeout', () => req.destroy())
    req.once('error', () => resolve(false))
    req.end()
  })
}

/**
 * Starts moto's server (S3, DynamoDB and the rest on one port), installing it when missing.
 * @returns {Promise<MotoService>}
 */
export async function startMoto() {
  await ensureMoto()
  const port = await freePort()
  const launched = launch(join(VENV, 'bin', 'python'), [MOTO_LAUNCHER, '-H', HOST, '-p', String(port)])
  await waitReady(`moto_server on port ${port}`, launched, () => httpAnswers(port), 60_000)
  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    /** The moto_server's process id (a test may SIGSTOP its own moto to stall S3 and DynamoDB). */
    pid: /** @type {number} */ (launched.child.pid), // set: waitReady saw it running
    stop: () => stopChild(launched.child),
  }
}

/** The newest Debian PostgreSQL server's bin folder, installing the package when there is none. */
function postgresBin() {
  if (!debianPostgresBin()) ensureDebianPackage('postgresql', '/usr/lib/postgresql')
  const bin = debianPostgresBin()
  if (!bin)
    throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql after installing postgresql')
  return bin
}

/**
 * Starts a throwaway PostgreSQL cluster (Debian's binaries, installed when missing) in a fresh
 * temporary folder on a free loopback port. TCP logins need a password (SCRAM, as on RDS), so tests
 * exercise real password handling. Postgres refuses to run as root, so as root it runs as the
 * `postgres` user Debian's package creates.
 * @returns {Promise<PostgresService>}
 */
export async function startPostgres() {
  const bin = postgresBin()
  const folder = mkdtempSync(join(tmpdir(), 'symphony-pg-'))
  // Spawned as that user directly (not through runuser), so the exit hook's SIGKILL reaches postgres.
  /** @type {{ uid: number, gid: number } | { uid?: undefined, gid?: undefined }} */
  const user = userInfo().uid === 0 ? postgresUser() : {}
  if (user.uid !== undefined) chownSync(folder, user.uid, user.gid)
  const data = join(folder, 'data')
  const options = { cwd: folder, ...user }
  const password = randomBytes(12).toString('hex')
  const passwordFile = join(folder, 'password')
  writeFileSync(passwordFile, password)
  if (user.uid !== undefined) chownSync(passwordFile, user.uid, user.gid)
  const auth = ['--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${passwordFile}`]
  await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', ...auth, '--no-sync', '-E', 'UTF8'], {
    ...options,
    quiet: true,
  })
  const port = await freePort()
  const settings = [`listen_addresses=${HOST}`, 'fsync=off', 'synchronous_commit=off', 'full_page_writes=off']
  const launched = launch(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', folder, ...settings.flatMap((setting) => ['-c', setting])],
    options,
  )
  await waitReady(`postgres on port ${port}`, launched, () => acceptsConnections(port), 30_000)
  return {
    url: `postgres://postgres:${password}@${HOST}:${port}/postgres`,
    port,
    /** The postmaster's process id (each connection gets a child process of it). */
    pid: /** @type {number} */ (launched.child.pid), // set: waitReady saw it running
    async stop() {
      // SIGINT is Postgres's fast shutdown: SIGTERM would wait for every client to disconnect.
      await stopChild(launched.child, 5000, 'SIGINT')
      rmSync(folder, { recursive: true, force: true })
    },
  }
}

/** The uid and gid of the `postgres` user (Postgres will not run as root). */
function postgresUser() {
  const id = (/** @type {string} */ flag) =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/**
 * Whether something answers a Postgres SSLRequest on `port` (any one-byte reply).
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function acceptsConnections(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port })
    const done = (/** @type {boolean} */ value) => {
      socket.destroy()
      resolve(value)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once('error', () => done(false))
    socket.once('connect', () => socket.write(Buffer.from([0, 0, 0, 8, 4, 210, 22, 47])))
    socket.once('data', () => done(true))
  })
}
