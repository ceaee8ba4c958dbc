/**
 * `npm run bench`: the same workload against our server and the y-websocket 1.5.4 reference
 * server, side by side at several sizes, each server pinned to one core and the generator to the
 * other. Prints medians and the ratio ours / reference (below 1 is better for us).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { Report } from '../report-schema.js'
import { type Comparison, compare, formatComparison, troubles } from './compare.js'
import { runGenerator } from './generator.js'
import { cpuPinning, startReference, startSymphony } from './servers.js'

const { values } = parseArgs({
  options: {
    workload: { type: 'string', default: 'symphony' },
    sizes: { type: 'string', default: '25,60,150' },
    duration: { type: 'string', default: '15' },
    ramp: { type: 'string', default: '5' },
    'per-room': { type: 'string' },
    repeat: { type: 'string', default: '3' },
    json: { type: 'string' },
    // Node/V8 flags for both servers alike (NODE_OPTIONS), e.g. a young-generation size to compare.
    'node-options': { type: 'string', default: '' },
  },
})
const sizes = String(values.sizes)
  .split(',')
  .map((size) => Number(size))
const repeat = Number(values.repeat)
if (sizes.some((size) => !Number.isInteger(size) || size < 1) || !Number.isInteger(repeat) || repeat < 1) {
  console.error('bench: --sizes is a list of room counts (e.g. 25,60,150), --repeat a whole number')
  process.exit(2)
}

const pinning = cpuPinning()
const serverCpus = pinning?.server
const generatorCpus = pinning?.generator
const folder = mkdtempSync(join(tmpdir(), 'symphony-bench-'))
const nodeOptions: Record<string, string> = values['node-options']
  ? { NODE_OPTIONS: values['node-options'] }
  : {}
const contenders = [
  // Metadata off: in a deployment it goes to a Postgres of its own, not into the sync server's
  // process as `npm start`'s embedded PGlite does (whose WASM heap would swamp the memory figure).
  {
    name: 'symphony',
    start: () => startSymphony({ cpus: serverCpus, env: { ...nodeOptions, DATABASE_URL: 'none' } }),
  },
  { name: 'y-websocket 1.5.4', start: () => startReference({ cpus: serverCpus, env: nodeOptions }) },
]

console.log(
  `bench: ${values.workload} workload, ${values.duration}s after a ${values.ramp}s ramp, rooms ${sizes.join('/')}, median of ${repeat}`,
)
if (values['node-options']) console.log(`both servers run with NODE_OPTIONS=${values['node-options']}`)
console.log(
  `machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, Node ${process.version}`,
)
console.log(
  pinning
    ? 'servers pinned to CPU 0 and the generator to CPU 1 with taskset'
    : 'warning: taskset or a second core is missing, so nothing is pinned: figures mix server and generator',
)

const comparisons: Comparison[] = []
try {
  for (const rooms of sizes) {
    const reports = new Map<string, Report[]>(contenders.map((c) => [c.name, []]))
    for (let round = 0; round < repeat; round++) {
      // Alternate who goes first, so a noisy neighbour does not always land on the same one.
      const order = round % 2 === 0 ? contenders : [...contenders].reverse()
      for (const contender of order) {
        const server = await contender.start()
        try {
          const report = await runGenerator({
            urls: [server.url],
            serverPids: [server.pid],
            workload: String(values.workload),
            rooms,
            perRoom: values['per-room'],
            duration: String(values.duration),
            ramp: String(values.ramp),
            json: join(folder, `${rooms}-${round}-${contender.name.replace(/\W+/g, '-')}.json`),
            cpus: generatorCpus,
          })
          reports.get(contender.name)?.push(report)
          console.log(`  ${rooms} rooms, round ${round + 1}: ${contender.name} ${oneLine(report)}`)
        } finally {
          await server.stop()
        }
      }
    }
    const [ours = [], reference = []] = contenders.map((c) => reports.get(c.name) ?? [])
    const comparison = compare(rooms, ours, reference)
    comparisons.push(comparison)
    console.log(`\n${formatComparison(comparison)}\n`)
  }
  if (values.json) {
    writeFileSync(String(values.json), `${JSON.stringify({ comparisons }, null, 2)}\n`)
    console.log(`JSON: ${values.json}`)
  }
} finally {
  rmSync(folder, { recursive: true, force: true })
}

function oneLine(report: Report): string {
  const { steady, convergence } = report
  const problems = troubles(report)
  return [
    `steady: update p99 ${steady.latency.update.p99}ms`,
    `presence p99 ${steady.latency.presence.p99}ms`,
    `cpu ${steady.cpuMicrosecondsPerDeliveredMessage}us/msg`,
    `rss ${((steady.rssBytesPerUser ?? 0) / 1024).toFixed(1)}KiB/user`,
    `generator ${Math.max(...report.agents.map((a) => a.generatorCpuPercent.mean))}% cpu`,
    `converged ${convergence.converged}/${convergence.rooms}`,
    problems ? `PROBLEMS ${problems} (errors + drops)` : 'no errors or drops',
  ].join(', ')
}
