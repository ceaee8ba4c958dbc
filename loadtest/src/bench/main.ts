/**
 * `npm run bench`: the same workload against our server, as users run it, and the peers, side by
 * side at several sizes, each server pinned to one core and the generator to the other. Prints a
 * table of medians per server and the ratios of ours to each peer (below 1 is better for us).
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { median } from '../measurement/median.js'
import { serverStatsSource } from '../measurement/server-stats.js'
import type { Report } from '../reporting/report-schema.js'
import type { Protocol } from '../virtual-users/wire.js'
import { startSymphonyCluster, startSymphonyCluster3 } from './cluster-services.js'
import {
  type Comparison,
  type ContenderResult,
  formatComparison,
  rssPerAddedUser,
  summarize,
  troubles,
} from './compare.js'
import { runGenerator } from './generator.js'
import {
  cpuPinning,
  type StartedServer,
  type StartOptions,
  startHocuspocus,
  startReference,
  startSymphony,
  startYSweet,
  startYWebsocketServer,
} from './servers.js'

interface Contender {
  name: string
  protocol?: Protocol
  start(options: StartOptions): Promise<StartedServer>
}

const CONTENDERS: Contender[] = [
  // As `npm start` runs it: file snapshots and journal, PGlite in its own process.
  { name: 'symphony', start: (o) => startSymphony(o) },
  // As the cluster runs it: a Redis journal, a real Postgres (both pinned beside it).
  { name: 'symphony-cluster', start: (o) => startSymphonyCluster(o) },
  // What production runs: three servers sharing Redis, Postgres and a registry (one owner per room,
  // the other servers relaying to it); each room's users on one server, or over all three.
  { name: 'symphony-cluster-local', start: (o) => startSymphonyCluster3(o, 'room') },
  { name: 'symphony-cluster-spread', start: (o) => startSymphonyCluster3(o, 'spread') },
  // The engine alone, with no metadata database: what `npm start` must come within 10 % of.
  {
    name: 'symphony-no-metadata',
    start: (o) => startSymphony({ ...o, env: { ...o.env, DATABASE_URL: 'none' } }),
  },
  { name: 'y-sweet', start: (o) => startYSweet(o) },
  { name: 'y-websocket', start: (o) => startReference(o) },
  { name: 'y-websocket-server', start: (o) => startYWebsocketServer(o) },
  { name: 'hocuspocus', protocol: 'hocuspocus', start: (o) => startHocuspocus(o) },
]

const { values } = parseArgs({
  options: {
    workload: { type: 'string', default: 'symphony' },
    sizes: { type: 'string', default: '25,60,150' },
    duration: { type: 'string', default: '15' },
    ramp: { type: 'string', default: '5' },
    'per-room': { type: 'string' },
    repeat: { type: 'string', default: '3' },
    servers: { type: 'string', default: CONTENDERS.map((c) => c.name).join(',') },
    json: { type: 'string' },
    // Node/V8 flags for every Node server alike (NODE_OPTIONS), e.g. a young-generation size to compare.
    'node-options': { type: 'string', default: '' },
  },
})
const sizes = String(values.sizes)
  .split(',')
  .map((size) => Number(size))
const repeat = Number(values.repeat)
const chosen = String(values.servers).split(',')
const unknown = chosen.filter((name) => !CONTENDERS.some((c) => c.name === name))
if (sizes.some((size) => !Number.isInteger(size) || size < 1) || !Number.isInteger(repeat) || repeat < 1) {
  console.error('bench: --sizes is a list of room counts (e.g. 25,60,150), --repeat a whole number')
  process.exit(2)
}
if (unknown.length) {
  console.error(
    `bench: unknown --servers ${unknown.join(', ')}; known: ${CONTENDERS.map((c) => c.name).join(', ')}`,
  )
  process.exit(2)
}
const contenders = CONTENDERS.filter((c) => chosen.includes(c.name))

const pinning = cpuPinning()
const folder = mkdtempSync(join(tmpdir(), 'symphony-bench-'))
const env: Record<string, string> = values['node-options'] ? { NODE_OPTIONS: values['node-options'] } : {}

console.log(
  `bench: ${values.workload} workload, ${values.duration}s after a ${values.ramp}s ramp, rooms ${sizes.join('/')}, median of ${repeat}`,
)
console.log(`servers: ${contenders.map((c) => c.name).join(', ')}`)
if (values['node-options']) console.log(`Node servers run with NODE_OPTIONS=${values['node-options']}`)
console.log(
  `machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, Node ${process.version}`,
)
console.log(
  pinning
    ? 'servers (and their helpers) pinned to CPU 0 and the generator to CPU 1 with taskset'
    : 'warning: taskset or a second core is missing, so nothing is pinned: figures mix server and generator',
)

const comparisons: Comparison[] = []
try {
  for (const rooms of sizes) {
    const reports = new Map<string, Report[]>(contenders.map((c) => [c.name, []]))
    const helperCpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]))
    const helperRss = new Map<string, number[]>(contenders.map((c) => [c.name, []]))
    const roomsHeld = new Map<string, number[]>(contenders.map((c) => [c.name, []]))
    const heapPerUser = new Map<string, number[]>(contenders.map((c) => [c.name, []]))
    const unavailable = new Map<string, string>()
    for (let round = 0; round < repeat; round++) {
      // Alternate the order, so a noisy neighbour does not always land on the same one.
      const order = round % 2 === 0 ? contenders : [...contenders].reverse()
      for (const contender of order) {
        if (unavailable.has(contender.name)) continue
        let server: StartedServer
        try {
          server = await contender.start({ cpus: pinning?.server, env })
        } catch (error) {
          // Reported in the table, never silently left out.
          const reason = (error as Error).message.split('\n')[0] ?? 'unknown'
          unavailable.set(contender.name, reason)
          console.log(`  ${contender.name}: could not start: ${reason}`)
          continue
        }
        try {
          const helpers = serverStatsSource([], server.helperPids ?? [])
          const before = server.helperPids?.length ? await helpers.read() : null
          const helpersRss = before ? rssRange(helpers) : null
          const startedAt = performance.now()
          // Halfway through the steady state: how many copies of the rooms the servers hold.
          const halfway = (Number(values.ramp) + Number(values.duration) / 2) * 1000
          const ours = contender.name.startsWith('symphony')
          const urls = server.urls ?? [server.url]
          const held = ours
            ? delay(halfway).then(() => summedMetric(urls, 'symphony_rooms'))
            : Promise.resolve(null)
          // The servers' V8 heap in use, read each second of the steady state, above where it was
          // before the run: what the users' state costs, without the allocator's and GC's headroom.
          const heapBefore = ours ? await summedMetric(urls, 'nodejs_heap_size_used_bytes') : null
          const steadyFrom = (Number(values.ramp) + 3) * 1000
          const heapReadings =
            heapBefore === null ? null : everySecond(urls, steadyFrom, Number(values.duration) - 3)
          const report = await runGenerator({
            urls: server.urls ?? [server.url],
            placement: server.placement,
            // Every process of the setup counts: the servers and their helpers (Redis, a database).
            serverPids: [...(server.pids ?? [server.pid]), ...(server.helperPids ?? [])],
            workload: String(values.workload),
            protocol: contender.protocol,
            rooms,
            perRoom: values['per-room'],
            duration: String(values.duration),
            ramp: String(values.ramp),
            json: join(folder, `${rooms}-${round}-${contender.name}.json`),
            cpus: pinning?.generator,
          })
          const after = before ? await helpers.read() : null
          const rssRise = helpersRss?.stop()
          if (before && after) {
            const seconds = (performance.now() - startedAt) / 1000
            helperCpu.get(contender.name)?.push((100 * (after.cpuSeconds - before.cpuSeconds)) / seconds)
          }
          if (rssRise !== undefined)
            helperRss.get(contender.name)?.push(rssRise / 1024 / report.workload.users)
          reports.get(contender.name)?.push(report)
          const copies = await held
          if (copies !== null) roomsHeld.get(contender.name)?.push(copies)
          const heapSteady = median((await heapReadings) ?? [])
          if (heapBefore !== null && heapSteady !== null)
            heapPerUser.get(contender.name)?.push((heapSteady - heapBefore) / 1024 / report.workload.users)
          console.log(`  ${rooms} rooms, round ${round + 1}: ${contender.name} ${oneLine(report)}`)
        } catch (error) {
          // A server that cannot keep up at this size is reported, not waited for round after round.
          const reason = (error as Error).message
          unavailable.set(contender.name, reason)
          console.log(`  ${rooms} rooms, round ${round + 1}: ${contender.name}: ${reason}`)
        } finally {
          await server.stop()
        }
      }
    }
    const results: ContenderResult[] = contenders.map((c) => {
      const result = summarize(
        c.name,
        reports.get(c.name) ?? [],
        { cpuPercent: helperCpu.get(c.name) ?? [], rssKiBPerUser: helperRss.get(c.name) ?? [] },
        roomsHeld.get(c.name) ?? [],
        heapPerUser.get(c.name) ?? [],
      )
      const reason = unavailable.get(c.name)
      return reason ? { ...result, unavailable: reason } : result
    })
    const users = [...reports.values()].flat()[0]?.workload.users ?? 0
    const comparison = { rooms, users, contenders: results }
    comparisons.push(comparison)
    console.log(`\n${formatComparison(comparison)}\n`)
  }
  for (const line of rssPerAddedUser(comparisons)) console.log(line)
  if (values.json) {
    writeFileSync(String(values.json), `${JSON.stringify({ comparisons }, null, 2)}\n`)
    console.log(`JSON: ${values.json}`)
  }
} finally {
  rmSync(folder, { recursive: true, force: true })
}

/** The unlabelled metric `name` summed over the servers at `urls`; null if one did not answer. */
async function summedMetric(urls: string[], name: string): Promise<number | null> {
  try {
    const counts = await Promise.all(
      urls.map(async (url) => {
        const text = await (await fetch(`${url.replace(/^ws/, 'http')}/metrics`)).text()
        return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
      }),
    )
    const sum = counts.reduce((a, b) => a + b, 0)
    return Number.isFinite(sum) ? sum : null
  } catch {
    return null
  }
}

/** The servers' heap in use, summed, each second for `seconds` from `fromMs` on. */
async function everySecond(urls: string[], fromMs: number, seconds: number): Promise<number[]> {
  await delay(fromMs)
  const readings: number[] = []
  for (let i = 0; i < seconds; i++) {
    const heap = await summedMetric(urls, 'nodejs_heap_size_used_bytes')
    if (heap !== null) readings.push(heap)
    await delay(1000)
  }
  return readings
}

/** Reads the helpers' RSS each second until stopped; `stop()` gives its highest minus its lowest. */
function rssRange(source: ReturnType<typeof serverStatsSource>): { stop(): number | undefined } {
  let [low, high] = [Number.POSITIVE_INFINITY, 0]
  const timer = setInterval(() => {
    void source.read().then((reading) => {
      if (!reading) return
      low = Math.min(low, reading.rssBytes)
      high = Math.max(high, reading.rssBytes)
    })
  }, 1000)
  return {
    stop() {
      clearInterval(timer)
      return high >= low ? high - low : undefined
    },
  }
}

function oneLine(report: Report): string {
  const { steady, convergence } = report
  const problems = troubles(report)
  const generator = Math.max(...report.agents.map((a) => a.generatorCpuPercent.mean))
  const server = report.server.cpuPercent.mean
  return [
    `steady: update p99 ${steady.latency.update.p99}ms`,
    `presence p99 ${steady.latency.presence.p99}ms`,
    `cpu ${steady.cpuMicrosecondsPerDeliveredMessage}us/msg`,
    `rss ${((steady.rssBytesPerUser ?? 0) / 1024).toFixed(1)}KiB/user`,
    `generator ${generator}% cpu${server ? ` (${(generator / server).toFixed(2)} of the server's)` : ''}`,
    `converged ${convergence.converged}/${convergence.rooms}`,
    problems ? `PROBLEMS ${problems} (errors + drops)` : 'no errors or drops',
  ].join(', ')
}
