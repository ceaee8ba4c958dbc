import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type RedisService, startMoto, startRedis } from '@symphony/dev-scripts/services'
import { sharedRegistry } from '../src/bench/cluster-services.js'
import { type StartedServer, startHocuspocus, startSymphony } from '../src/bench/servers.js'
import { runLocal } from '../src/distribution/local-run.js'
import { type RunSettings, runSettings, UsageError } from '../src/options.js'

const SECRET = 'loadtest-secret-that-is-32-chars-long!'

function settings(
  server: StartedServer,
  overrides: Record<string, string | boolean | undefined> = {},
  env: NodeJS.ProcessEnv = { LOADTEST_TOKEN_SECRET: SECRET },
): RunSettings {
  return runSettings(
    {
      url: server.url,
      workload: 'symphony',
      rooms: '3',
      duration: '3',
      ramp: '1',
      'server-pid': String(server.pid),
      'real-clients': false,
      quiet: true,
      ...overrides,
    },
    env,
  )
}

describe('a short local run against a real server', () => {
  let server: StartedServer
  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { AUTH_SECRET: SECRET, DATABASE_URL: 'none' } })
  })
  after(() => server.stop())

  test('produces every metric with sane values', async () => {
    const started = performance.now()
    const report = await runLocal(settings(server))
    const wholeRunMs = performance.now() - started
    const { latency, counts } = report
    assert.equal(report.workload.users, 12)
    assert.equal(latency.connect.count, 12, 'every user connected and synced once')
    assert.equal(counts.connectErrors + counts.errors + counts.unexpectedCloses, 0, report.errors.join('; '))
    // 3 of each room's 4 users send ~1 update/s for 3 s to the observer; it sees all but its own.
    assert.ok(counts.updatesSent >= 24, `updates sent: ${counts.updatesSent}`)
    assert.ok(counts.presenceSent >= 5 * counts.updatesSent * 0.8, `presence sent: ${counts.presenceSent}`)
    for (const metric of ['connect', 'update', 'presence'] as const) {
      const l = latency[metric]
      assert.ok(l.count > 0, `${metric}: measured`)
      assert.ok(l.min > 0 && l.min <= l.p50 && l.p50 <= l.p95 && l.p95 <= l.p99 && l.p99 <= l.max, metric)
      // In milliseconds, and none longer than the whole run (a unit mix-up would be).
      assert.ok(l.p99 <= wholeRunMs, `${metric} p99 ${l.p99} ms of a ${wholeRunMs.toFixed(0)} ms run`)
    }
    assert.deepEqual(report.drops, { updates: 0, presence: 0 })
    assert.equal(latency.update.count, counts.updatesObserved)
    assert.deepEqual(report.convergence, { rooms: 3, converged: 3, failures: [] })
    // The server was read from /proc: it used CPU, holds memory, and served the fan-out.
    assert.equal(report.target.statsSource, 'proc')
    assert.ok((report.server.cpuSeconds ?? 0) > 0)
    assert.ok((report.server.rssBytes.baseline ?? 0) > 10 * 2 ** 20)
    assert.equal(report.server.deliveredMessages, (counts.updatesSent + counts.presenceSent) * 3)
    assert.ok((report.server.cpuMicrosecondsPerDeliveredMessage ?? 0) > 0)
    assert.ok(counts.framesReceived >= report.server.deliveredMessages, 'every delivery arrived as a frame')
    // The steady state: the seconds after the ramp and a settling pause, a part of the whole run.
    const { steady } = report
    assert.ok(steady.fromSecond >= 1 && steady.toSecond > steady.fromSecond, JSON.stringify(steady))
    assert.ok(steady.latency.update.count > 0 && steady.latency.update.count < latency.update.count)
    assert.ok(steady.latency.presence.count > 0 && steady.latency.presence.count < latency.presence.count)
    assert.ok((steady.cpuMicrosecondsPerDeliveredMessage ?? 0) > 0)
    assert.ok(steady.rssBytesPerUser !== null)
    assert.ok(report.timeline.length >= 4, `timeline of ${report.timeline.length} seconds`)
    assert.ok(report.timeline.some((s) => s.serverCpuPercent !== null && s.serverRssBytes !== null))
    assert.ok(report.agents[0] && report.agents[0].generatorCpuPercent.max > 0)
  })

  test('reads the server from /metrics without a pid, and runs the client library with --real-clients', async () => {
    const report = await runLocal(
      settings(server, { 'server-pid': undefined, rooms: '2', 'real-clients': true }),
    )
    assert.equal(report.target.statsSource, 'metrics')
    assert.ok((report.server.rssBytes.max ?? 0) > 0)
    assert.equal(report.latency.connect.count, 8)
    assert.ok(report.latency.update.count > 0 && report.latency.presence.count > 0)
    assert.deepEqual(report.drops, { updates: 0, presence: 0 })
    assert.equal(report.convergence.converged, 2)
  })

  test('counts refused connections as connect errors, not as users', async () => {
    const wrongSecret = 'another-secret-that-is-32-chars-long!!'
    const report = await runLocal(
      settings(server, { rooms: '1', duration: '1' }, { LOADTEST_TOKEN_SECRET: wrongSecret }),
    )
    assert.equal(report.latency.connect.count, 0)
    assert.ok(report.counts.connectErrors >= 1)
    assert.match(report.errors.join('\n'), /HTTP 401/)
    assert.deepEqual(
      report.convergence.failures.map((f) => f.reason),
      ['the observer never synced'],
    )
  })
})

describe('runs across two servers of one cluster (a Redis journal, a shared registry)', () => {
  let redis: RedisService
  let moto: { stop(): Promise<void>; endpoint: string }
  let servers: StartedServer[] = []
  before(async () => {
    ;[redis, moto] = await Promise.all([startRedis(), startMoto()])
    const registry = await sharedRegistry(moto.endpoint)
    const env = {
      AUTH_SECRET: SECRET,
      PUBSUB: redis.url,
      JOURNAL: redis.url,
      DATABASE_URL: 'none',
      ...registry,
    }
    servers = await Promise.all([startSymphony({ env }), startSymphony({ env })])
  })
  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await Promise.all([redis.stop(), moto.stop()])
  })

  /** The rooms a server has loaded, from any source (a sum over the counter's `source` labels). */
  const roomLoads = async (server: StartedServer) => {
    const text = await (await fetch(`${server.url.replace(/^ws/, 'http')}/metrics`)).text()
    const samples = text.matchAll(/^symphony_room_loads_total(?:\{[^}]*\})? (\S+)$/gm)
    return [...samples].reduce((sum, [, value]) => sum + Number(value), 0)
  }

  // Each run has rooms of its own (a random prefix), so the loads it adds are its own. Each room is
  // loaded once, by its owner, wherever its users are.
  const cases = [
    {
      name: "--placement spread (the default): each room's users over both servers, the room held by one",
      options: {},
      rooms: 3,
      loads: null,
    },
    {
      name: '--placement room: every user of a room on one server, the rooms taking the servers in turn',
      options: { placement: 'room' },
      rooms: 4,
      loads: [2, 2],
    },
  ]
  for (const { name, options, rooms, loads } of cases) {
    test(`${name}; the CPU of every process given is summed`, async () => {
      const [a, b] = servers as [StartedServer, StartedServer]
      const loadsBefore = await Promise.all([roomLoads(a), roomLoads(b)])
      const report = await runLocal(
        settings(a, {
          url: `${a.url},${b.url}`,
          rooms: String(rooms),
          'server-pid': `${a.pid},${b.pid},${redis.pid}`,
          ...options,
        }),
      )
      assert.deepEqual(report.convergence, { rooms, converged: rooms, failures: [] })
      assert.deepEqual([report.drops.updates, report.drops.presence], [0, 0])
      assert.ok(report.counts.updatesObserved > 0, 'edits reached the observers')
      const loadsAfter = await Promise.all([roomLoads(a), roomLoads(b)])
      const added = loadsAfter.map((count, i) => count - (loadsBefore[i] ?? 0))
      if (loads) assert.deepEqual(added, loads, 'rooms each server loaded')
      assert.equal(
        added.reduce((sum, count) => sum + count, 0),
        rooms,
        'each room loaded once, by its owner',
      )
      assert.equal(report.target.url, `${a.url},${b.url}`)
      assert.ok((report.server.cpuPercent.mean ?? 0) > 0, 'the processes used CPU')
    })
  }
})

describe('run options', () => {
  const base = {
    url: 'ws://127.0.0.1:1',
    workload: 'symphony',
    duration: '1',
    ramp: '0',
    'real-clients': false,
    quiet: false,
  }
  const refused = (overrides: Record<string, string>, message: RegExp, env: NodeJS.ProcessEnv = {}) =>
    assert.throws(
      () => runSettings({ ...base, ...overrides }, env),
      (e: Error) => e instanceof UsageError && message.test(e.message),
    )

  test('the workload presets fill what is not given', () => {
    const s = runSettings(base, {})
    assert.deepEqual(
      [s.workload.rooms, s.workload.perRoom, s.workload.docRate, s.workload.presenceRate],
      [60, 4, 1, 5],
    )
    const beacon = runSettings({ ...base, workload: 'beacon', 'per-room': '5' }, {})
    assert.deepEqual(
      [beacon.workload.perRoom, beacon.workload.writers, beacon.workload.edit],
      [5, 'first', 'append'],
    )
  })

  test('refuses what cannot run, naming the option', () => {
    refused({ workload: 'figma' }, /^--workload/)
    refused({ 'per-room': '1' }, /^--per-room: at least 2/)
    refused({ rooms: '0' }, /^--rooms/)
    refused({ duration: '0' }, /^--duration/)
    refused({ url: 'localhost:1234' }, /^--url/)
    refused({ 'room-prefix': 'a/b' }, /^--room-prefix/)
    refused({ placement: 'random' }, /^--placement/)
  })

  test('takes several servers and server processes as comma-separated lists', () => {
    const s = runSettings(
      { ...base, url: 'ws://127.0.0.1:1,http://127.0.0.1:2/', 'server-pid': '11,22,33' },
      {},
    )
    assert.deepEqual(s.urls, ['ws://127.0.0.1:1', 'ws://127.0.0.1:2'])
    assert.deepEqual(s.serverPids, [11, 22, 33])
    refused({ url: 'ws://127.0.0.1:1,localhost:2' }, /^--url/)
    refused({ 'server-pid': '11,x' }, /^--server-pid/)
  })

  test('takes the token secret from LOADTEST_TOKEN_SECRET or --token-secret-file, the file first', () => {
    assert.equal(runSettings(base, { LOADTEST_TOKEN_SECRET: SECRET }).tokenSecret, SECRET)
    const folder = mkdtempSync(join(tmpdir(), 'loadtest-secret-'))
    try {
      const file = join(folder, 'secret')
      writeFileSync(file, `${SECRET}-from-the-file\n`) // as `echo … > file` leaves it
      const fromFile = { ...base, 'token-secret-file': file }
      assert.equal(runSettings(fromFile, {}).tokenSecret, `${SECRET}-from-the-file`)
      assert.equal(
        runSettings(fromFile, { LOADTEST_TOKEN_SECRET: SECRET }).tokenSecret,
        `${SECRET}-from-the-file`,
      )
      refused(
        { 'token-secret-file': join(folder, 'missing') },
        /^--token-secret-file: cannot read .* \(ENOENT\)/,
      )
      writeFileSync(file, 'short\n')
      refused({ 'token-secret-file': file }, /^LOADTEST_TOKEN_SECRET \/ --token-secret-file: at least 32/)
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
    refused({}, /^LOADTEST_TOKEN_SECRET \/ --token-secret-file: at least 32 characters/, {
      LOADTEST_TOKEN_SECRET: 'short',
    })
  })
})

describe('a short local run against Hocuspocus, in its framing', () => {
  let server: StartedServer
  before(async () => {
    server = await startHocuspocus()
  })
  after(() => server.stop())

  test('every edit and cursor reaches the observer and every room converges', async () => {
    const report = await runLocal(settings(server, { protocol: 'hocuspocus' }, {}))
    const { counts } = report
    assert.equal(report.latency.connect.count, 12, 'every user synced: its Auth message was taken')
    assert.equal(counts.connectErrors + counts.errors + counts.unexpectedCloses, 0, report.errors.join('; '))
    assert.ok(counts.updatesObserved > 0 && counts.presenceObserved > 0)
    assert.deepEqual(report.drops, { updates: 0, presence: 0 })
    assert.deepEqual(report.convergence, { rooms: 3, converged: 3, failures: [] })
  })
})
