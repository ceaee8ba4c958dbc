import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const outputs: string[] = []

/** `npx cdk synth` at the repository root, as docs/deploy.md says, with no AWS credentials or network. */
function cdkSynth(...args: string[]) {
  const output = mkdtempSync(join(tmpdir(), 'symphony-cli-'))
  outputs.push(output)
  const environment = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('AWS_') && !key.startsWith('CDK_')),
  )
  return spawnSync('npx', ['cdk', 'synth', '--output', output, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 240_000,
    // No credentials, and no instance-metadata lookups for them: synthesis must need neither.
    env: { ...environment, AWS_EC2_METADATA_DISABLED: 'true' },
  })
}

describe('npx cdk synth at the root (offline, no Docker, no AWS account)', () => {
  after(() => {
    for (const output of outputs) rmSync(output, { recursive: true, force: true })
  })

  it('prints the template, which has passed cdk-nag', () => {
    const run = cdkSynth()
    assert.equal(run.status, 0, run.stderr)
    assert.match(run.stdout, /^Description: Symphony real-time collaboration backend \(small\)/m)
    assert.match(run.stdout, /Value: least_outstanding_requests/)
    assert.match(run.stdout, /HealthCheckPath: \/healthz/)
    assert.match(run.stdout, /WebSocketUrl:/)
    // The sync tasks say which build they run (symphony_build_info): the checkout's commit.
    const head = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8' }).stdout.trim()
    assert.match(head, /^[0-9a-f]{12}$/)
    // Quoted when it reads as a number (all digits, or digits around one e): YAML keeps it a string.
    assert.match(run.stdout, new RegExp(`- Name: SYMPHONY_COMMIT\\s+Value: "?${head}"?\\n`))
  })

  it('stops on a bad context value with one line naming the key', () => {
    const run = cdkSynth('-c', 'size=huge')
    assert.notEqual(run.status, 0)
    assert.match(
      run.stderr,
      /symphony infra: context size: Invalid option: expected one of "small"\|"medium"\|"large"/,
    )
    assert.doesNotMatch(run.stderr, /at .*\.ts:\d+/, 'no stack trace')
  })
})
