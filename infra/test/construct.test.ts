import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fencedBlocks } from '@symphony/test-helpers/doc-examples'
import { RemovalPolicy } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import { type SymphonyProps, SymphonyPropsError } from '../lib/symphony-props.js'
import { ISOLATED, inOtherStack, PRIVATE, PUBLIC, prebuilt } from './helpers/other-stack.js'
import { CDK_JSON_CONTEXT } from './helpers/synthesize.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const EXAMPLE = 'infra/test/examples/existing-vpc.ts'
const outdirs: string[] = []

/** Runs the example as `cdk synth` would (the CLI's outdir and context), from the built package. */
function synthesizeExample(): Template {
  const outdir = mkdtempSync(join(tmpdir(), 'symphony-construct-'))
  outdirs.push(outdir)
  const run = spawnSync(process.execPath, ['--import', 'tsx', EXAMPLE], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(CDK_JSON_CONTEXT) },
  })
  assert.equal(run.status, 0, `the example's synthesis failed (cdk-nag findings fail it):\n${run.stderr}`)
  return Template.fromJSON(JSON.parse(readFileSync(join(outdir, 'Collaboration.template.json'), 'utf8')))
}

const deletionPolicies = (template: Template, type: string) =>
  Object.values(template.findResources(type)).map((resource) => resource.DeletionPolicy)

describe('the Symphony construct inside a stack of your own', () => {
  after(() => {
    for (const outdir of outdirs.splice(0)) rmSync(outdir, { recursive: true, force: true })
  })

  it('docs/deploy.md shows the example this test synthesizes, as it is', () => {
    const page = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8')
    const shown = fencedBlocks({ page: 'docs/deploy.md', text: page }).filter((block) =>
      block.words.includes(EXAMPLE),
    )
    assert.equal(shown.length, 1, `one block of docs/deploy.md is marked ${EXAMPLE}`)
    assert.deepEqual(shown[0]?.words, ['fragment', EXAMPLE])
    assert.equal(shown[0]?.code, readFileSync(join(ROOT, EXAMPLE), 'utf8'))
  })

  it('the example, from the built package: into the imported VPC’s subnets, no VPC of its own, tagged, data kept, cdk-nag clean', () => {
    const template = synthesizeExample()
    for (const type of ['VPC', 'Subnet', 'NatGateway', 'InternetGateway', 'FlowLog', 'VPCEndpoint']) {
      template.resourceCountIs(`AWS::EC2::${type}`, 0)
    }
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Subnets: PUBLIC })
    const services = template.findResources('AWS::ECS::Service')
    assert.equal(Object.keys(services).length, 2)
    for (const service of Object.values(services)) {
      assert.deepEqual(service.Properties.NetworkConfiguration.AwsvpcConfiguration.Subnets, PRIVATE)
    }
    template.hasResourceProperties('AWS::RDS::DBSubnetGroup', { SubnetIds: PRIVATE })
    template.hasResourceProperties('AWS::ElastiCache::SubnetGroup', { SubnetIds: PRIVATE })
    // Tags reach every taggable resource, the data's and the services' alike.
    for (const type of [
      'AWS::S3::Bucket',
      'AWS::RDS::DBInstance',
      'AWS::ElastiCache::ReplicationGroup',
      'AWS::ECS::Service',
      'AWS::ECS::Cluster',
      'AWS::Logs::LogGroup',
      'AWS::SecretsManager::Secret',
      'AWS::ElasticLoadBalancingV2::LoadBalancer',
    ]) {
      for (const [id, resource] of Object.entries(template.findResources(type))) {
        const tags = resource.Properties.Tags as { Key: string; Value: string }[]
        assert.ok(
          tags.some((tag) => tag.Key === 'team' && tag.Value === 'collaboration'),
          `${id} (${type}) has the team tag`,
        )
      }
    }
    for (const type of [
      'AWS::S3::Bucket',
      'AWS::RDS::DBInstance',
      'AWS::ElastiCache::ReplicationGroup',
      'AWS::Logs::LogGroup',
    ]) {
      assert.deepEqual(new Set(deletionPolicies(template, type)), new Set(['Retain']), type)
    }
    template.hasResourceProperties('AWS::RDS::DBInstance', { DeletionProtection: true })
    // Prebuilt images from ECR: the task definitions name the repository, nothing is built.
    const images = Object.values(template.findResources('AWS::ECS::TaskDefinition')).flatMap((task) =>
      task.Properties.ContainerDefinitions.map((container: { Image: unknown }) =>
        JSON.stringify(container.Image),
      ),
    )
    assert.ok(
      images.some((image) => image.includes('symphony:sync-server-0.1.0')),
      images.join('\n'),
    )
    assert.ok(images.some((image) => image.includes('symphony:dashboard-0.1.0')))
    assert.ok(
      images.every((image) => !image.includes('cdk-hnb659fds-container-assets')),
      'no image asset',
    )
    const outputs = Object.keys(template.findOutputs('*'))
    assert.ok(
      outputs.some((name) => name.startsWith('SymphonyWebSocketUrl')),
      outputs.join(', '),
    )
    template.hasResourceProperties('AWS::SecretsManager::Secret', { Name: 'Collaboration/api-secret' })
  })

  it('from its packed tarball in an app outside the repository: asks for prebuilt images, then synthesizes', () => {
    const app = mkdtempSync(join(tmpdir(), 'symphony-infra-app-'))
    outdirs.push(app)
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--workspace', 'infra', '--pack-destination', app], {
        cwd: ROOT,
        encoding: 'utf8',
      }),
    )
    execFileSync('tar', ['-xzf', join(app, packed.filename), '-C', app])
    mkdirSync(join(app, 'node_modules', '@symphony'), { recursive: true })
    renameSync(join(app, 'package'), join(app, 'node_modules', '@symphony', 'infra'))
    // The app's own aws-cdk-lib and constructs (the peers), and the package's zod: the repository's copies.
    for (const name of ['aws-cdk-lib', 'constructs', 'zod']) {
      symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name))
    }
    writeFileSync(
      join(app, 'app.mjs'),
      [
        "import { App, Stack } from 'aws-cdk-lib'",
        "import * as ecs from 'aws-cdk-lib/aws-ecs'",
        "import { Symphony } from '@symphony/infra'",
        'const app = new App({ outdir: process.argv[2] })',
        "const env = { region: 'eu-west-1' }",
        "const image = (name) => ecs.ContainerImage.fromRegistry('public.ecr.aws/example/' + name + ':1')",
        "const images = { sync: image('sync'), dashboard: image('dashboard') }",
        "try { new Symphony(new Stack(app, 'Agnostic'), 'Symphony', { images }) } catch (error) { console.log(error.code) }",
        "try { new Symphony(new Stack(app, 'Bare', { env }), 'Symphony') } catch (error) { console.log(error.code) }",
        "new Symphony(new Stack(app, 'Prebuilt', { env }), 'Symphony', { images })",
        'app.synth()',
      ].join('\n'),
    )
    const outdir = join(app, 'cdk.out')
    const run = spawnSync(process.execPath, ['app.mjs', outdir], {
      cwd: app,
      encoding: 'utf8',
      timeout: 120_000,
    })
    assert.equal(run.status, 0, run.stderr)
    assert.deepEqual(run.stdout.trim().split('\n'), ['SYMPHONY_REGION_MISSING', 'SYMPHONY_IMAGES_MISSING'])
    const template = Template.fromJSON(
      JSON.parse(readFileSync(join(outdir, 'Prebuilt.template.json'), 'utf8')),
    )
    template.resourceCountIs('AWS::ECS::Service', 2)
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([Match.objectLike({ Image: 'public.ecr.aws/example/sync:1' })]),
    })
  })

  it('default subnets in an imported three-tier VPC: public, private with egress, isolated', () => {
    const { template } = inOtherStack({ images: prebuilt })
    template.resourceCountIs('AWS::EC2::VPC', 0)
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Subnets: PUBLIC })
    template.hasResourceProperties('AWS::ECS::Service', {
      NetworkConfiguration: { AwsvpcConfiguration: { Subnets: PRIVATE } },
    })
    template.hasResourceProperties('AWS::RDS::DBSubnetGroup', { SubnetIds: ISOLATED })
    template.hasResourceProperties('AWS::ElastiCache::SubnetGroup', { SubnetIds: ISOLATED })
  })

  it('removalPolicy DESTROY deletes every piece of data; SNAPSHOT snapshots the database and Redis, keeps MemoryDB', () => {
    const destroyed = inOtherStack({
      images: prebuilt,
      removalPolicy: RemovalPolicy.DESTROY,
      database: { engineVersion: '16.14' },
    }).template
    destroyed.hasResourceProperties('AWS::RDS::DBInstance', { EngineVersion: '16.14' })
    for (const type of ['AWS::S3::Bucket', 'AWS::RDS::DBInstance', 'AWS::Logs::LogGroup']) {
      assert.deepEqual(new Set(deletionPolicies(destroyed, type)), new Set(['Delete']), type)
    }
    // Redis without a policy is deleted: CloudFormation's own default.
    assert.deepEqual(deletionPolicies(destroyed, 'AWS::ElastiCache::ReplicationGroup'), [undefined])
    destroyed.hasResourceProperties('AWS::RDS::DBInstance', { DeletionProtection: false })
    destroyed.resourceCountIs('Custom::S3AutoDeleteObjects', 2)

    const snapshot = inOtherStack({ images: prebuilt, removalPolicy: RemovalPolicy.SNAPSHOT }).template
    assert.deepEqual(deletionPolicies(snapshot, 'AWS::RDS::DBInstance'), ['Snapshot'])
    assert.deepEqual(deletionPolicies(snapshot, 'AWS::ElastiCache::ReplicationGroup'), ['Snapshot'])
    assert.deepEqual(new Set(deletionPolicies(snapshot, 'AWS::S3::Bucket')), new Set(['Retain']))
    assert.deepEqual(new Set(deletionPolicies(snapshot, 'AWS::Logs::LogGroup')), new Set(['Retain']))

    // With the journal on MemoryDB there is no ElastiCache to keep.
    const memoryDb = inOtherStack({
      images: prebuilt,
      removalPolicy: RemovalPolicy.SNAPSHOT,
      journal: { store: 'memorydb' },
    }).template
    assert.deepEqual(deletionPolicies(memoryDb, 'AWS::ElastiCache::ReplicationGroup'), [])
    assert.deepEqual(
      deletionPolicies(memoryDb, 'AWS::MemoryDB::Cluster'),
      ['Retain'],
      'MemoryDB takes no snapshot',
    )
  })

  it('names its secrets, alarms and metrics after `name`, so two fit in one stack', () => {
    const { template } = inOtherStack({ images: prebuilt, name: 'collab-eu' })
    template.hasResourceProperties('AWS::RDS::DBInstance', { EngineVersion: '16.13' })
    template.hasResourceProperties('AWS::SecretsManager::Secret', { Name: 'collab-eu/api-secret' })
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
    assert.ok(alarms.length > 10)
    for (const alarm of alarms) assert.match(alarm.Properties.AlarmName, /^collab-eu-/)
  })

  it('refuses props out of range with one line naming the prop', () => {
    const refused = (props: Omit<SymphonyProps, 'vpc'>, pattern: RegExp) =>
      assert.throws(
        () => inOtherStack({ images: prebuilt, ...props }),
        (error: unknown) =>
          error instanceof SymphonyPropsError &&
          error.code === 'INVALID_SYMPHONY_PROPS' &&
          pattern.test(error.message),
      )
    refused(
      { sync: { minTasks: 4, maxTasks: 2 } },
      /^Symphony sync\.maxTasks: must be at least minTasks \(4\)$/,
    )
    refused({ sync: { cpu: 2048 } }, /^Symphony sync\.cpu: must be 256, 512 or 1024/)
    refused({ sync: { cpu: 512, memoryMiB: 512 } }, /^Symphony sync\.memoryMiB: Fargate allows 1024–4096/)
    refused({ domainName: 'collab.example.com' }, /^Symphony domainName: needs certificate/)
    refused({ database: { engineVersion: '16' } }, /^Symphony database\.engineVersion: must be 16\.<minor>/)
    refused({ natGateways: 2 }, /^Symphony natGateways: only for the VPC the construct makes/)
    refused(
      { shutdownTimeoutSeconds: 200 },
      /^Symphony shutdownTimeoutSeconds: must be a whole number from 5 to 110$/,
    )
    refused(
      { journal: { store: 'memorydb' }, redis: { replicas: 1 } },
      /^Symphony redis: only with the journal on ElastiCache \(with MemoryDB there is none\)$/,
    )
    assert.throws(
      () => inOtherStack({ images: prebuilt, serverSettings: { PUBSUB: 'redis://elsewhere' } as never }),
      /^Error: Symphony serverSettings: PUBSUB is not a server setting/,
    )
  })
})
