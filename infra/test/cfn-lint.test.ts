import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { CFN_LINT, ensureCfnLint } from '@symphony/dev-scripts/services'
import { RemovalPolicy } from 'aws-cdk-lib'
import { inOtherStack, prebuilt } from './helpers/other-stack.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'

const CERTIFICATE = 'arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc'

/**
 * Findings cfn-lint may report on our templates: a rule on the resources whose logical ids start
 * with `resource`, each with why it is not fixed. Every entry must still match something: a
 * suppression nothing needs is a failure too.
 */
const SUPPRESSED: { rule: string; resource: string; reason: string }[] = [
  {
    rule: 'W3005',
    resource: 'CustomS3AutoDeleteObjectsCustomResourceProviderHandler',
    reason:
      'CDK’s own provider of the buckets’ auto-delete (removalPolicy DESTROY, retainData=false) gives its ' +
      'function a DependsOn on the role it also GetAtts: redundant, harmless, and not ours to change.',
  },
]

const suppression = (finding: Finding) =>
  SUPPRESSED.find(
    ({ rule, resource }) => finding.Rule.Id === rule && String(finding.Location.Path[1]).startsWith(resource),
  )

interface Finding {
  Rule: { Id: string; Description: string }
  Level: 'Error' | 'Warning' | 'Informational'
  Filename: string
  Message: string
  Location: { Path: (string | number)[] }
}

/** The templates `npm test` lints, by name: the bundled app's variants and the construct in another stack. */
function templates(): Record<string, unknown> {
  const app = (context: Record<string, unknown>) => synthesize(context).template.toJSON()
  return {
    default: app({}),
    'load-agents': app({ loadAgents: 'true' }),
    tls: app({ size: 'large', certificateArn: CERTIFICATE, domainName: 'collab.example.com' }),
    memorydb: app({ journalStore: 'memorydb', retainData: 'false', cpuArchitecture: 'arm64' }),
    'existing-vpc': inOtherStack({ images: prebuilt }).template.toJSON(),
    'existing-vpc-snapshot': inOtherStack({
      images: prebuilt,
      removalPolicy: RemovalPolicy.SNAPSHOT,
      journal: { store: 'memorydb' },
      loadAgents: true,
    }).template.toJSON(),
  }
}

/**
 * A template with two mistakes cfn-lint must find, linted in the same run: proof that the run looks
 * at what it is given (a linter that read nothing would find nothing in ours either).
 */
const PLANTED = {
  Resources: {
    Bucket: { Type: 'AWS::S3::Bucket', Properties: { BucketNameTypo: 'x' } },
    Queue: { Type: 'AWS::SQS::Queue', DependsOn: 'Bucket', Properties: { QueueName: { Ref: 'Bucket' } } },
  },
}

describe('cfn-lint on the synthesized templates', () => {
  const folder = mkdtempSync(join(tmpdir(), 'symphony-cfn-lint-'))
  let findings: Finding[] = []
  let names: string[] = []

  before(async () => {
    await ensureCfnLint()
    const files = Object.entries({ ...templates(), planted: PLANTED }).map(([name, template]) => {
      const file = join(folder, `${name}.json`)
      writeFileSync(file, JSON.stringify(template))
      return file
    })
    names = files.map((file) => basename(file, '.json'))
    // One process over every template: cfn-lint's start-up (its specs) is most of its time.
    const run = spawnSync(
      CFN_LINT,
      ['--format', 'json', '--regions', 'us-east-1', 'eu-west-1', '--', ...files],
      {
        encoding: 'utf8',
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
      },
    )
    assert.equal(run.error, undefined, `cfn-lint did not run: ${run.error}`)
    assert.ok(
      run.stdout.trim().startsWith('['),
      `cfn-lint printed no JSON (exit ${run.status}): ${run.stderr}`,
    )
    findings = JSON.parse(run.stdout)
  })

  after(() => {
    rmSync(folder, { recursive: true, force: true })
    removeSynthesized()
  })

  it('finds the planted mistakes: the run reads every template it is given', () => {
    const planted = findings.filter((finding) => basename(finding.Filename, '.json') === 'planted')
    const ids = new Set(planted.map((finding) => finding.Rule.Id))
    assert.ok(ids.has('E3002'), `an unknown property (E3002): ${[...ids].join(', ')}`)
    assert.ok(ids.has('W3005'), `a DependsOn that repeats a Ref (W3005): ${[...ids].join(', ')}`)
    assert.deepEqual(names, [
      'default',
      'load-agents',
      'tls',
      'memorydb',
      'existing-vpc',
      'existing-vpc-snapshot',
      'planted',
    ])
  })

  it('no error and no unsuppressed warning in any of our templates', () => {
    const ours = findings.filter((finding) => basename(finding.Filename, '.json') !== 'planted')
    const failing = ours.filter((finding) => finding.Level !== 'Informational' && !suppression(finding))
    const lines = failing.map(
      (finding) =>
        `${basename(finding.Filename)} ${finding.Rule.Id} ${finding.Level} at ${finding.Location.Path.join('/')}: ${finding.Message}`,
    )
    assert.deepEqual(lines, [])
    const unused = SUPPRESSED.filter((entry) => !ours.some((finding) => suppression(finding) === entry))
    assert.deepEqual(unused, [], 'suppressions nothing needs any more')
  })
})
