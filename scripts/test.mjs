#!/usr/bin/env node
// Runs every package's test suite with Node's test runner. Tests are TypeScript, run through tsx;
// --expose-gc lets the memory tests force a collection. Arguments narrow the run to those files.
// Real Redis and moto (S3, DynamoDB) run for the tests on free loopback ports and stop afterwards.
// `--unit` runs only the in-memory layer (server/test/unit): no services, no browser, one process.
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runOnPinnedNode } from './lib/pinned-node.mjs'
import { REDIS_SERVER, startMoto, startPostgres, startRedis } from './lib/services.mjs'
import { ensureTestRequirements } from './lib/test-requirements.mjs'

const unit = process.argv.includes('--unit')
// Redis, Postgres, Chromium, Python for moto and cfn-lint: installed when missing (Debian), else a stop that says
// how to run the suite on this machine, before anything is fetched or started. The unit tests need none.
if (!unit && !process.env.SYMPHONY_TEST_REQUIREMENTS_MET) {
  await ensureTestRequirements()
  process.env.SYMPHONY_TEST_REQUIREMENTS_MET = '1' // not again in the re-run on the pinned Node
}
// The tests run on the Node the images ship (package.json devEngines), whatever this machine's is.
await runOnPinnedNode(import.meta.url)

const root = fileURLToPath(new URL('..', import.meta.url))
const packages = [
  'server',
  'client-lib/client',
  'client-lib/node',
  'client-lib/react',
  'dashboard-server',
  'loadtest',
  'infra',
]

function testFiles(folder) {
  let entries
  try {
    entries = readdirSync(folder, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return testFiles(path)
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : []
  })
}

const named = process.argv.slice(2).filter((arg) => arg !== '--unit')
const files = unit
  ? testFiles(join(root, 'server', 'test', 'unit'))
  : named.length > 0
    ? named
    : packages.flatMap((p) => testFiles(join(root, p, 'test')))
if (files.length === 0) {
  console.error('no test files found')
  process.exit(1)
}
if (unit) {
  // Each test builds its own in-memory world, so the files can share one process (much faster).
  const run = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-isolation=none', ...files], {
    cwd: root,
    stdio: 'inherit',
  })
  process.exit(await new Promise((resolve) => run.once('exit', (code) => resolve(code ?? 1))))
}
const services = []
let stopping
const stopServices = () => {
  stopping ??= Promise.allSettled(services.map((service) => service.stop()))
  return stopping
}

// Ctrl-C or SIGTERM: stop the tests, then the services, then exit. (Children still running when this
// process exits, e.g. a service still starting, are killed by the exit hook of lib/services.mjs.)
let tests
let interrupted
const SIGNAL_CODES = { SIGINT: 130, SIGTERM: 143 }
for (const signal of Object.keys(SIGNAL_CODES)) {
  process.on(signal, async () => {
    if (interrupted) return
    interrupted = signal
    if (tests && tests.exitCode === null && tests.signalCode === null) {
      tests.kill(signal)
      setTimeout(() => tests.kill('SIGKILL'), 10_000).unref()
      return // the tests' exit handler below stops the services and exits
    }
    await stopServices()
    process.exit(SIGNAL_CODES[signal])
  })
}

// Moto first: its (first-run) pip install then goes on while apt may install redis-server.
const [moto, redis, postgres] = await Promise.allSettled([startMoto(), startRedis(), startPostgres()])
const started = [moto, redis, postgres]
for (const service of started) if (service.status === 'fulfilled') services.push(service.value)
if (moto.status === 'rejected' || redis.status === 'rejected' || postgres.status === 'rejected') {
  for (const service of started) if (service.status === 'rejected') console.error(service.reason)
  await stopServices()
  process.exit(1)
}
console.log(`[services] redis on 127.0.0.1:${redis.value.port}`)
console.log(`[services] postgres on 127.0.0.1:${postgres.value.port}`)
console.log(`[services] moto (S3, DynamoDB) on ${moto.value.endpoint}`)

const env = {
  ...process.env,
  SYMPHONY_TEST_REDIS_URL: redis.value.url,
  SYMPHONY_TEST_REDIS_PORT: String(redis.value.port),
  SYMPHONY_TEST_REDIS_SERVER: REDIS_SERVER,
  SYMPHONY_TEST_AWS_ENDPOINT_URL: moto.value.endpoint,
  SYMPHONY_TEST_DATABASE_URL: postgres.value.url,
  AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
  AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
  AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
}

/** Runs test files with Node's runner, `concurrency` files at a time; resolves to its exit code. */
function runTests(testFiles, concurrency) {
  tests = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--expose-gc',
      '--test',
      `--test-concurrency=${concurrency}`,
      '--test-timeout=300000',
      ...testFiles,
    ],
    { cwd: root, env, stdio: 'inherit' },
  )
  return new Promise((resolve) => {
    tests.once('error', (error) => {
      console.error(error)
      resolve(1)
    })
    tests.once('exit', (code) => resolve(code ?? 1))
  })
}

// `*.solo.test.ts` files load the machine or measure timing under load (a reconnect storm, a soak):
// they run alone, afterwards, so no other file shares the two cores with them.
const solo = files.filter((file) => file.endsWith('.solo.test.ts'))
const shared = files.filter((file) => !solo.includes(file))
let status = shared.length > 0 ? await runTests(shared, 2) : 0
if (solo.length > 0 && !interrupted) {
  console.log(`[tests] ${solo.length} solo file(s), one at a time: ${solo.join(', ')}`)
  status = (await runTests(solo, 1)) || status
}
await stopServices()
process.exit(interrupted ? SIGNAL_CODES[interrupted] : status)
