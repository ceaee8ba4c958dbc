import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type StartedServer, startSymphony } from '../src/bench/servers.js'
import { Collector } from '../src/measurement/collector.js'
import { encodeHistogram, newHistogram, recordMs, summarize } from '../src/measurement/histogram.js'
import { type IntervalReport, zeroCounters } from '../src/measurement/measures.js'
import type { Report } from '../src/reporting/report-schema.js'
import { runCli, startCoordinator } from './helpers/cli.js'

const JOIN_TOKEN = 'join-token-for-the-distributed-test'

describe('a coordinator with two agents', () => {
  let server: StartedServer
  let folder: string
  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    folder = mkdtempSync(join(tmpdir(), 'loadtest-agents-'))
  })
  after(async () => {
    await server.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('hands each agent whole rooms and merges what they measured; thresholds met exit 0', async () => {
    const json = join(folder, 'report.json')
    const run = ['--url', server.url, '--rooms', '5', '--duration', '3', '--ramp', '1', '--quiet'].concat([
      '--threshold',
      'drops==0',
      '--threshold',
      'doc.p99<5000',
    ])
    const coordinator = startCoordinator(
      ['coordinator', '--agents', '2', '--host', '127.0.0.1', '--port', '0', '--json', json].concat([
        '--html',
        join(folder, 'report.html'),
        ...run,
      ]),
      { LOADTEST_JOIN_TOKEN: JOIN_TOKEN },
    )
    const url = await coordinator.url
    const agents = ['one', 'two'].map((name) =>
      runCli(['agent', '--coordinator', url, '--once', '--name', name], undefined, undefined, {
        LOADTEST_JOIN_TOKEN: JOIN_TOKEN,
      }),
    )
    const finished = await coordinator.done
    assert.equal(finished.code, 0, finished.stderr)
    assert.match(finished.stdout, /^✓ drops==0/m)
    assert.match(finished.stdout, /^✓ doc\.p99<5000/m)
    for (const agent of agents) assert.equal((await agent.done).code, 0)

    const report: Report = JSON.parse(readFileSync(json, 'utf8'))
    const shares = report.agents.map((a) => [a.rooms, a.users]).sort((x, y) => (x[0] ?? 0) - (y[0] ?? 0))
    assert.deepEqual(shares, [
      [2, 8],
      [3, 12],
    ])
    assert.deepEqual(report.agents.map((a) => a.agent.split('#')[0]).sort(), ['one', 'two'])
    assert.ok(report.agents.every((a) => a.generatorCpuPercent.max > 0))
    assert.equal(report.latency.connect.count, 20, 'both agents connected their users')
    assert.equal(report.latency.update.count, report.counts.updatesObserved)
    assert.ok(report.counts.updatesSent >= 40 && report.latency.presence.count > 0)
    assert.deepEqual(report.drops, { updates: 0, presence: 0 })
    assert.deepEqual(report.convergence, { rooms: 5, converged: 5, failures: [] })
    assert.deepEqual(
      report.thresholds.map((t) => [t.expression, t.ok]),
      [
        ['drops==0', true],
        ['doc.p99<5000', true],
      ],
    )
    const timelineConnects = report.timeline.reduce((sum, s) => sum + s.latency.connect.count, 0)
    assert.equal(timelineConnects, 20, 'the per-second histograms add up to the totals')
    assert.match(finished.stdout, /^WS connect \+ sync +20 +0 /m)
  })
})

describe('an agent whose coordinator dies mid-run', () => {
  test('stops loading the server at once instead of at the planned end', async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    const server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    try {
      const coordinator = startCoordinator(
        ['coordinator', '--agents', '1', '--host', '127.0.0.1', '--port', '0', '--url', server.url].concat([
          '--rooms',
          '2',
          '--duration',
          '120',
          '--ramp',
          '0',
          '--quiet',
        ]),
        { LOADTEST_JOIN_TOKEN: JOIN_TOKEN },
      )
      const url = await coordinator.url
      let running: () => void = () => {}
      const started = new Promise<void>((resolve) => {
        running = resolve
      })
      const agent = runCli(
        ['agent', '--coordinator', url, '--once'],
        (stderr) => {
          if (/: 2 rooms/.test(stderr)) running()
        },
        undefined,
        { LOADTEST_JOIN_TOKEN: JOIN_TOKEN },
      )
      await started
      const killedAt = Date.now()
      coordinator.child.kill('SIGKILL')
      const finished = await agent.done
      assert.equal(finished.code, 1, finished.stderr)
      assert.match(finished.stderr, /the coordinator left mid-run; stopping/)
      assert.ok(Date.now() - killedAt < 10_000, 'well before the 120 s planned end')
    } finally {
      await server.stop()
    }
  })
})

describe('the collector', () => {
  test('merges histograms from several agents exactly, as if one had measured everything', () => {
    const interval = (agent: string, second: number, updates: number[]): IntervalReport => {
      const histogram = newHistogram()
      for (const value of updates) recordMs(histogram, value)
      return {
        agent,
        second,
        histograms: { connect: null, update: encodeHistogram(histogram), presence: null },
        counters: { ...zeroCounters(), updatesObserved: updates.length },
        usersConnected: 4,
        generatorCpuPercent: 10,
      }
    }
    const a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    const b = [100, 200, 300]
    const collector = new Collector()
    collector.add(interval('a', 1, a.slice(0, 5)))
    collector.add(interval('b', 1, b))
    collector.add(interval('a', 2, a.slice(5)))

    const all = newHistogram()
    for (const value of [...a, ...b]) recordMs(all, value)
    const timeline = collector.timeline([])
    const merged = collector.totals()
    assert.deepEqual(merged.latency.update, summarize(all))
    assert.equal(merged.latency.update.count, 13)
    assert.ok(merged.latency.update.p99 >= 299 && merged.latency.update.max >= 299)
    assert.equal(merged.counts.updatesObserved, 13)
    assert.deepEqual(
      timeline.map((s) => [s.second, s.users, s.latency.update.count]),
      [
        [1, 8, 8],
        [2, 4, 5],
      ],
    )
  })
})
