import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type StartedServer, startSymphony } from '../src/bench/servers.js'
import type { Report } from '../src/reporting/report-schema.js'
import type { SoakReport } from '../src/soak.js'
import { runCli } from './helpers/cli.js'

const SECRET = 'the-secret-the-harness-must-never-show-0123'

// The secrets come from the environment or a file: npm echoes its command line, ps shows it.
describe('the harness keeps its secrets off the command line and out of its output', {
  concurrency: true,
}, () => {
  let server: StartedServer
  let folder: string
  before(async () => {
    // No metadata database: starting the embedded one costs about 3 s, and nothing here reads it.
    server = await startSymphony({ env: { AUTH_SECRET: SECRET, DATABASE_URL: 'none' } })
    folder = mkdtempSync(join(tmpdir(), 'loadtest-secrets-'))
  })
  after(async () => {
    await server.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('a secret on the command line is refused, naming the variable and the file option, without repeating it', async () => {
    for (const [args, pointer] of [
      [
        ['--url', server.url, '--token-secret', SECRET],
        /Set LOADTEST_TOKEN_SECRET, or pass --token-secret-file FILE/,
      ],
      [[`--token-secret=${SECRET}`], /Set LOADTEST_TOKEN_SECRET, or pass --token-secret-file FILE/],
      [['soak', '--token-secret', SECRET], /Set LOADTEST_TOKEN_SECRET/],
      [['coordinator', '--join-token', SECRET], /Set LOADTEST_JOIN_TOKEN, or pass --join-token-file FILE/],
      [['agent', '--coordinator', 'ws://127.0.0.1:1', '--join-token', SECRET], /Set LOADTEST_JOIN_TOKEN/],
    ] as const) {
      const { code, stdout, stderr } = await runCli([...args]).done
      assert.equal(code, 2, stderr)
      assert.match(stderr, /is not accepted: the command line is echoed by npm/)
      assert.match(stderr, pointer)
      assert.ok(!`${stdout}${stderr}`.includes(SECRET), stderr)
    }
  })

  test('a run signs with the secret from --token-secret-file, and neither its output nor its reports hold it', async () => {
    const secretFile = join(folder, 'token-secret')
    writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 })
    const json = join(folder, 'run.json')
    const html = join(folder, 'run.html')
    const args = `--url ${server.url} --workload beacon --rooms 2 --duration 1 --ramp 0`.split(' ')
    const { code, stdout, stderr } = await runCli(
      [
        ...args,
        '--token-secret-file',
        secretFile,
        '--json',
        json,
        '--html',
        html,
        '--threshold',
        'errors==0',
      ],
      undefined,
      undefined,
      { LOADTEST_TOKEN_SECRET: '' },
    ).done
    assert.equal(code, 0, stderr)
    const report: Report = JSON.parse(readFileSync(json, 'utf8'))
    assert.equal(
      report.latency.connect.count,
      report.workload.users,
      'every user was admitted: the tokens are good',
    )
    for (const text of [stdout, stderr, readFileSync(json, 'utf8'), readFileSync(html, 'utf8')]) {
      assert.ok(!text.includes(SECRET))
    }
  })

  test("a soak's report says tokens were used, never the secret", async () => {
    const json = join(folder, 'soak.json')
    const { code, stdout, stderr } = await runCli(
      [
        'soak',
        '--url',
        server.url,
        '--rooms',
        '1',
        '--per-room',
        '2',
        '--duration',
        '1',
        '--sample',
        '0.5',
      ].concat(['--json', json, '--quiet']),
      undefined,
      undefined,
      { LOADTEST_TOKEN_SECRET: SECRET },
    ).done
    assert.notEqual(code, 2, stderr)
    const text = readFileSync(json, 'utf8')
    const report: SoakReport = JSON.parse(text)
    assert.equal(report.settings.tokens, true)
    assert.deepEqual(report.errors, [], 'the users were admitted')
    for (const shown of [text, stdout, stderr]) assert.ok(!shown.includes(SECRET))
  })
})
