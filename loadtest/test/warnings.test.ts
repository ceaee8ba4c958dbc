import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { startWarnings } from '../src/distribution/start-warnings.js'
import { Collector } from '../src/measurement/collector.js'
import { type IntervalReport, zeroCounters } from '../src/measurement/measures.js'
import { ServerSampler } from '../src/measurement/server-stats.js'
import type { WorkerSummary } from '../src/measurement/worker-summary.js'
import { ReportSchema } from '../src/reporting/report-schema.js'
import { WORKLOADS } from '../src/virtual-users/workloads.js'

const second = (agent: string, n: number, generatorCpuPercent: number): IntervalReport => ({
  agent,
  second: n,
  histograms: { connect: null, update: null, presence: null },
  counters: zeroCounters(),
  usersConnected: 4,
  generatorCpuPercent,
})

const summary = (agent: string): WorkerSummary => ({
  agent,
  rooms: 1,
  users: 4,
  drops: { updates: 0, presence: 0 },
  convergence: { rooms: 1, converged: 1, failures: [] },
  errors: [],
  warnings: [],
})

async function reportFor(cpuByAgent: Record<string, number[]>) {
  const collector = new Collector()
  for (const [agent, cpu] of Object.entries(cpuByAgent)) {
    for (const [i, percent] of cpu.entries()) collector.add(second(agent, i + 1, percent))
  }
  const silent = new ServerSampler({ kind: 'metrics', read: async () => null })
  await silent.start(performance.now())
  const run = {
    urls: ['ws://127.0.0.1:1'],
    workload: { ...WORKLOADS.symphony, rooms: Object.keys(cpuByAgent).length, perRoom: 4 },
    rampSeconds: 0,
    durationSeconds: 3,
    realClients: false,
    startedAt: new Date(),
  }
  return collector.report(run, Object.keys(cpuByAgent).map(summary), silent)
}

describe('warnings', () => {
  test('a generator above 80 % of a core on average is named as the possible bottleneck', async () => {
    const report = await reportFor({ busy: [95, 90, 85], idle: [10, 12, 9] })
    assert.equal(report.warnings.length, 1)
    assert.match(report.warnings[0] ?? '', /generator busy used 90% of a core .* may be the bottleneck/)
    ReportSchema.parse(report)
    // A server that never answered leaves its figures empty rather than made up.
    assert.equal(report.target.statsSource, 'none')
    assert.equal(report.server.cpuSeconds, null)
    assert.equal(report.server.rssBytesPerUser, null)
  })

  test('a generator just under the line gets no warning', async () => {
    assert.deepEqual((await reportFor({ calm: [80, 79, 81] })).warnings, [])
  })

  test('a run needing more sockets than ulimit -n allows is told so before it starts', () => {
    const [warning] = startWarnings(10_000_000)
    assert.match(warning ?? '', /^ulimit -n is \d+ here, and this run needs about 10000064 descriptors/)
    assert.deepEqual(startWarnings(10), [])
  })
})
