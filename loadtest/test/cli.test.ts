import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { type StartedServer, startSymphony } from '../src/bench/servers.js'
import { escapeHtml } from '../src/reporting/escape-html.js'
import { type Report, reportJsonSchema } from '../src/reporting/report-schema.js'
import { runCli } from './helpers/cli.js'

const schemaFile = new URL('../report.schema.json', import.meta.url)

// Each test runs its own CLI processes on rooms of their own (a random prefix per run) and writes
// its own files, and most of their time is the runs' fixed durations: they can share the time.
describe('the symphony-loadtest command', { concurrency: true }, () => {
  let server: StartedServer
  let folder: string
  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    folder = mkdtempSync(join(tmpdir(), 'loadtest-cli-'))
  })
  /** A short beacon run against the test server. */
  const beacon = (rooms: number, seconds: number, ramp: number) =>
    `--url ${server.url} --workload beacon --rooms ${rooms} --duration ${seconds} --ramp ${ramp}`.split(' ')
  after(async () => {
    await server.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('prints the table and writes a JSON report that validates against its schema, and an HTML report', async () => {
    const json = join(folder, 'report.json')
    const html = join(folder, 'report.html')
    const args = beacon(4, 3, 1)
    const passing = [
      '--threshold',
      'errors==0',
      '--threshold',
      'diverged == 0',
      '--threshold',
      'connect.count>=12',
    ]
    const { code, stdout, stderr } = await runCli([...args, '--json', json, '--html', html, ...passing]).done
    assert.equal(code, 0, stderr)
    assert.match(
      stdout,
      /^thresholds:\n✓ errors==0 {2}\(measured 0\)\n✓ diverged == 0 {2}\(measured 0\)\n✓ connect.count>=12/m,
    )
    assert.match(stdout, /^metric +count +errors +p50\(ms\) +p95\(ms\) +p99\(ms\) +max\(ms\)$/m)
    assert.match(stdout, /^WS connect \+ sync +12 +0 /m)
    assert.match(stdout, /^Update broadcast +\d+ +0 /m)
    assert.match(stdout, /convergence: 4\/4 rooms/)

    const report: Report = JSON.parse(readFileSync(json, 'utf8'))
    const ajv = new Ajv2020({ allErrors: true })
    addFormats.default(ajv)
    const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, 'utf8')))
    assert.ok(validate(report), JSON.stringify(validate.errors))
    assert.equal(report.workload.name, 'beacon')
    assert.deepEqual(
      report.thresholds.map((t) => [t.expression, t.ok]),
      [
        ['errors==0', true],
        ['diverged == 0', true],
        ['connect.count>=12', true],
      ],
    )
    assert.equal(report.target.statsSource, 'metrics', stderr)
    // The schema has teeth: a report missing a figure, or with a negative latency, fails it.
    const { drops: _, ...withoutDrops } = report
    assert.equal(validate(withoutDrops), false)
    assert.equal(
      validate({ ...report, latency: { ...report.latency, update: { ...report.latency.update, p99: -1 } } }),
      false,
    )

    const page = readFileSync(html, 'utf8')
    assert.match(page, /<h2>Broadcast latency over time<\/h2>/)
    assert.match(page, /<h2>Server resident memory<\/h2>/)
    assert.ok((page.match(/<path d="M/g) ?? []).length >= 4, 'latency, users, CPU and RSS lines are drawn')
    assert.ok(!/<script/i.test(page), 'the page is static')
    // Each threshold that sets the exit code, with what was measured and its verdict.
    assert.match(page, /All 3 thresholds hold: exit code 0\./)
    for (const expression of ['errors==0', 'diverged == 0', 'connect.count&#62;=12']) {
      const row = new RegExp(
        `<tr><td><code>${expression}</code></td><td>[\\d.]+</td><td class="pass">&#10003; pass</td></tr>`,
      )
      assert.match(page, row)
    }
    // The whole summary, every line of it, wrapped rather than clipped.
    const summary = /<pre class="summary">([^<]*)<\/pre>/.exec(page)?.[1] ?? ''
    for (const line of stdout.slice(0, stdout.indexOf('\nthresholds:')).split('\n')) {
      assert.ok(summary.includes(escapeHtml(line)), line)
    }
    assert.match(page, /pre\{[^}]*white-space:pre-wrap/)
    assert.doesNotMatch(page, /overflow-x/)
    // Every chart has an x axis with its seconds ticked: 0 and at least one more.
    const charts = page.split('<svg').slice(1)
    assert.equal(charts.length, 4)
    for (const chart of charts) {
      const ticks = [...chart.matchAll(/<g class="x-tick">.*?<text[^>]*>(\d+)<\/text><\/g>/g)].map((m) =>
        Number(m[1]),
      )
      assert.ok(ticks.length >= 2 && ticks[0] === 0, chart)
      assert.match(chart, /seconds since the start/)
    }
  })

  test('without --json and --html, each run leaves its own pair of reports in ./loadtest-results', async () => {
    const args = beacon(1, 1, 0)
    for (let run = 0; run < 2; run++) assert.equal((await runCli(args, undefined, folder).done).code, 0)
    const files = readdirSync(join(folder, 'loadtest-results')).sort()
    assert.equal(files.length, 4, files.join(', '))
    assert.deepEqual(
      files.map((file) => file.replace(/^.*-beacon\./, '')),
      ['html', 'json', 'html', 'json'],
    )
  })

  test('a crossed threshold ends the run with exit code 99, and the report says which', async () => {
    const json = join(folder, 'crossed.json')
    const thresholds = [
      '--threshold',
      'drops==0',
      '--threshold',
      'connect.p99<0.001',
      '--threshold',
      'cpu.max<1000',
    ]
    const args = [...beacon(2, 1, 0), '--json', json, '--html', join(folder, 'crossed.html'), ...thresholds]
    const { code, stdout, stderr } = await runCli(args).done
    assert.equal(code, 99, stderr)
    assert.match(stdout, /^✓ drops==0 {2}\(measured 0\)$/m)
    // Every user connects, so connect + sync is always measured (a 1 s run may send no update).
    assert.match(stdout, /^✗ connect.p99<0.001 {2}\(measured [\d.]+\)$/m)
    const report: Report = JSON.parse(readFileSync(json, 'utf8'))
    assert.deepEqual(
      report.thresholds.map((t) => t.ok),
      [true, false, true],
    )
    assert.ok((report.thresholds[1]?.actual ?? 0) > 0.001)
    const page = readFileSync(join(folder, 'crossed.html'), 'utf8')
    assert.match(page, /<p class="fail">1 of 3 thresholds crossed: exit code 99\.<\/p>/)
    assert.match(
      page,
      /<code>connect.p99&#60;0.001<\/code><\/td><td>[\d.]+<\/td><td class="fail">&#10007; fail/,
    )
    assert.match(page, /<code>drops==0<\/code><\/td><td>0<\/td><td class="pass">/)
  })

  test('the committed report.schema.json is the one the code generates', async () => {
    assert.deepEqual(JSON.parse(readFileSync(schemaFile, 'utf8')), reportJsonSchema())
    const { code, stdout } = await runCli(['schema']).done
    assert.equal(code, 0)
    assert.deepEqual(JSON.parse(stdout), reportJsonSchema())
  })

  test('bad options end with a clear line and exit code 2, before any connection', async () => {
    const { code, stderr } = await runCli(['--workload', 'figma', '--url', server.url]).done
    assert.equal(code, 2)
    assert.match(stderr, /symphony-loadtest: --workload: Invalid option/)
    const unknown = await runCli(['--roms', '3']).done
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /Unknown option '--roms'/)
    for (const [threshold, message] of [
      ['doc.p99<<50', /--threshold "doc.p99<<50" is not "metric op value"/],
      ['latency.p99<50', /--threshold "latency.p99<50": unknown metric "latency.p99"/],
      ['drops=0', /is not "metric op value" \(op: <= >= == != < >/],
    ] as const) {
      const bad = await runCli(['--url', server.url, '--threshold', 'drops==0', '--threshold', threshold])
        .done
      assert.equal(bad.code, 2)
      assert.match(bad.stderr, message)
      assert.doesNotMatch(bad.stderr, /progress|users/)
    }
  })
})
