/**
 * `npm run bench:cluster`: what a message pays for crossing servers. The same workload runs
 * against one server, then against two servers joined by Redis with each room's users split
 * between them, so every message a user sends crosses once (Redis also hands it back to its
 * sender, which drops it). Servers and Redis share CPU 0, the generator has CPU 1; CPU is summed
 * over every process of the setup. Prints medians: CPU per delivered message both ways, and the
 * difference per crossing message.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type RedisService, startRedis } from '@symphony/dev-scripts/services'
import { median } from '../measurement/median.js'
import type { Report } from '../reporting/report-schema.js'
import { troubles } from './compare.js'
import { runGenerator } from './generator.js'
import { cpuPinning, pin, type StartedServer, startSymphony } from './servers.js'

const { values } = parseArgs({
  options: {
    rooms: { type: 'string', default: '250' },
    duration: { type: 'string', default: '15' },
    ramp: { type: 'string', default: '5' },
    repeat: { type: 'string', default: '3' },
  },
})
const rooms = Number(values.rooms)
const repeat = Number(values.repeat)
const PER_ROOM = 4
const pinning = cpuPinning()
const folder = mkdtempSync(join(tmpdir(), 'symphony-bench-cluster-'))

interface Setup {
  name: string
  servers: StartedServer[]
  redis?: RedisService
}

async function single(): Promise<Setup> {
  const server = await startSymphony({ cpus: pinning?.server, env: { DATABASE_URL: 'none' } })
  return { name: 'one server', servers: [server] }
}

async function cluster(): Promise<Setup> {
  const redis = await startRedis()
  if (pinning) pin(redis.pid, pinning.server)
  const env = { DATABASE_URL: 'none', PUBSUB: redis.url }
  const starting = [1, 2].map(() => startSymphony({ cpus: pinning?.server, env }))
  const started = await Promise.allSettled(starting)
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const failed = started.find((result) => result.status === 'rejected')
  if (failed) {
    // Nothing is left running behind a failed start: Redis and any server that did come up.
    await Promise.all(servers.map((server) => server.stop()))
    await redis.stop()
    throw failed.reason
  }
  return { name: 'two servers + Redis', servers, redis }
}

async function measure(setup: Setup, round: number): Promise<Report> {
  try {
    return await runGenerator({
      urls: setup.servers.map((server) => server.url),
      serverPids: [...setup.servers.map((server) => server.pid), ...(setup.redis ? [setup.redis.pid] : [])],
      workload: 'symphony',
      rooms,
      perRoom: String(PER_ROOM),
      duration: String(values.duration),
      ramp: String(values.ramp),
      json: join(folder, `${round}-${setup.servers.length}.json`),
      cpus: pinning?.generator,
    })
  } finally {
    await Promise.all(setup.servers.map((server) => server.stop()))
    await setup.redis?.stop()
  }
}

console.log(
  `bench:cluster: symphony workload, ${rooms} rooms of ${PER_ROOM}, ${values.duration}s after a ${values.ramp}s ramp, median of ${repeat}`,
)
console.log(
  pinning
    ? 'servers and Redis pinned to CPU 0, the generator to CPU 1'
    : 'warning: taskset or a second core is missing, so nothing is pinned',
)
const results = new Map<string, Report[]>()
try {
  for (let round = 0; round < repeat; round++) {
    // Alternate who goes first, so a noisy neighbour does not always land on the same one.
    const order = round % 2 === 0 ? [single, cluster] : [cluster, single]
    for (const start of order) {
      const setup = await start()
      const report = await measure(setup, round)
      results.set(setup.name, [...(results.get(setup.name) ?? []), report])
      console.log(`  round ${round + 1}: ${setup.name}: ${summary([report])}`)
    }
  }
} finally {
  rmSync(folder, { recursive: true, force: true })
}

const one = results.get('one server') ?? []
const two = results.get('two servers + Redis') ?? []
console.log(`\nmedians:\n  one server:          ${summary(one)}\n  two servers + Redis: ${summary(two)}`)
const cpuOne = median(one.map((r) => r.steady.cpuMicrosecondsPerDeliveredMessage))
const cpuTwo = median(two.map((r) => r.steady.cpuMicrosecondsPerDeliveredMessage))
if (cpuOne !== null && cpuTwo !== null) {
  // Each message a user sends reaches the room's other PER_ROOM - 1 users and crosses once.
  const perCrossing = (cpuTwo - cpuOne) * (PER_ROOM - 1)
  console.log(
    `crossing servers: ${perCrossing.toFixed(1)} us of CPU per crossing message (all processes), cluster / one server = ${(cpuTwo / cpuOne).toFixed(2)} per delivered message`,
  )
}

function summary(reports: Report[]): string {
  const pick = (f: (r: Report) => number | null) => median(reports.map(f))
  const problems = reports.reduce((sum, r) => sum + troubles(r), 0)
  return [
    `cpu ${pick((r) => r.steady.cpuMicrosecondsPerDeliveredMessage)} us/delivered msg`,
    `update p99 ${pick((r) => r.steady.latency.update.p99)} ms`,
    `presence p99 ${pick((r) => r.steady.latency.presence.p99)} ms`,
    `rss ${((pick((r) => r.steady.rssBytesPerUser) ?? 0) / 1024).toFixed(1)} KiB/user`,
    `converged ${reports.map((r) => `${r.convergence.converged}/${r.convergence.rooms}`).join(' ')}`,
    problems ? `PROBLEMS ${problems} (errors + drops)` : 'no errors or drops',
  ].join(', ')
}
