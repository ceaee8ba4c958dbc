import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Match } from 'aws-cdk-lib/assertions'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import { parseDashboardConfig } from '../../dashboard-server/src/config.js'
import { DEFAULT_SUBNETS } from '../lib/network.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { containerNamed, sampleEnvironment } from './helpers/template-values.js'

const CERTIFICATE = 'arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789abc'

describe('the stack under other settings', () => {
  after(removeSynthesized)

  it('large with a certificate: HTTPS on 443 and 8443, HTTP redirected, wss:// URL on the given name', () => {
    const { template } = synthesize({
      size: 'large',
      certificateArn: CERTIFICATE,
      domainName: 'collab.example.com',
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 443,
      Protocol: 'HTTPS',
      Certificates: [{ CertificateArn: CERTIFICATE }],
      SslPolicy: Match.stringLikeRegexp('TLS13'),
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 8443, Protocol: 'HTTPS' })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', {
      Port: 80,
      DefaultActions: [
        Match.objectLike({
          Type: 'redirect',
          RedirectConfig: Match.objectLike({ Port: '443', Protocol: 'HTTPS' }),
        }),
      ],
    })
    const outputs = template.findOutputs('*')
    assert.equal(outputs.WebSocketUrl?.Value, 'wss://collab.example.com')
    assert.equal(outputs.DashboardUrl?.Value, 'https://collab.example.com:8443')
    const dashboard = parseDashboardConfig(sampleEnvironment(containerNamed(template, 'dashboard')))
    assert.deepEqual(dashboard.allowedHosts, ['sample.internal.example', 'collab.example.com'])
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 6,
      MaxCapacity: 40,
    })
    template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', {
      CacheNodeType: 'cache.m7g.large',
      NumCacheClusters: 2,
      AutomaticFailoverEnabled: true,
      MultiAZEnabled: true,
    })
    template.hasResourceProperties('AWS::RDS::DBInstance', { DBInstanceClass: 'db.m7g.large', MultiAZ: true })
    template.resourceCountIs('AWS::EC2::NatGateway', 2)
    const budget = sampleEnvironment(containerNamed(template, 'server')).MEMORY_BUDGET_BYTES
    assert.equal(budget, String(640 * 1024 * 1024), 'the memory budget grows with the 2 GiB task')
  })

  it('a throwaway stack with JWKS auth and its own task counts: everything deletable, no generated key', () => {
    const { template } = synthesize({
      size: 'medium',
      retainData: 'false',
      authJwksUrl: 'https://auth.example.com/.well-known/jwks.json',
      minTasks: '3',
      maxTasks: '5',
      dashboardAllowedCidr: '203.0.113.0/24',
      dashboardAllowedHosts: 'ops.example.com, Ops2.example.com:8080',
      allowedOrigins: 'https://app.example.com,https://admin.example.com',
    })
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtection: false, MultiAZ: true }),
    })
    template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Delete' })
    template.resourceCountIs('Custom::S3AutoDeleteObjects', 2)
    const environment = sampleEnvironment(containerNamed(template, 'server'))
    assert.equal(environment.AUTH_JWKS_URL, 'https://auth.example.com/.well-known/jwks.json')
    assert.equal(environment.AUTH_SECRET, undefined)
    assert.equal(environment.ALLOWED_ORIGINS, 'https://app.example.com,https://admin.example.com')
    const dashboard = parseDashboardConfig(sampleEnvironment(containerNamed(template, 'dashboard')))
    assert.deepEqual(dashboard.allowedHosts, [
      'sample.internal.example',
      'ops.example.com',
      'ops2.example.com:8080',
    ])
    assert.equal(template.findOutputs('AuthSecret').AuthSecret, undefined)
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 3,
      MaxCapacity: 5,
    })
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('load balancer'),
      SecurityGroupIngress: Match.arrayWith([Match.objectLike({ CidrIp: '203.0.113.0/24', FromPort: 8080 })]),
    })
  })

  it('cdk-nag runs on the app: one unacknowledged finding fails synthesis', () => {
    assert.throws(
      () =>
        synthesize({}, (stack) => {
          const group = new ec2.SecurityGroup(stack, 'Planted', { vpc: stack.symphony.vpc })
          group.addIngressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(22))
        }),
      /Validation failed/,
    )
  })

  it('load agents: a task definition and what `symphony-loadtest ecs` needs to run it per run, no standing service, cdk-nag clean', () => {
    const { template, assembly, stack } = synthesize({ loadAgents: 'true' })
    // The sync and dashboard services only: nothing of the agents runs between runs.
    template.resourceCountIs('AWS::ECS::Service', 2)
    const agent = containerNamed(template, 'agent')
    assert.equal(
      agent.Command,
      undefined,
      "the CLI gives each task its command (the image's default: --help)",
    )
    assert.deepEqual(agent.Ulimits, [{ Name: 'nofile', SoftLimit: 65535, HardLimit: 65535 }])
    assert.equal(agent.ReadonlyRootFilesystem, true)
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      NetworkMode: 'awsvpc',
      ContainerDefinitions: [
        Match.objectLike({ Name: 'agent', LogConfiguration: Match.objectLike({ LogDriver: 'awslogs' }) }),
      ],
    })
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: 'Symphony load agents: outbound only',
      SecurityGroupIngress: Match.absent(),
    })
    const outputs = template.findOutputs('*')
    for (const name of [
      'ClusterName',
      'LoadAgentTaskDefinitionArn',
      'LoadAgentSubnetIds',
      'LoadAgentSecurityGroupId',
      'LoadAgentRunPolicyArn',
    ]) {
      assert.ok(outputs[name], `output ${name}`)
    }
    const resolve = (value: unknown) => stack.resolve(value)
    const agents = stack.symphony.loadAgents
    assert.ok(agents)
    assert.deepEqual(outputs.LoadAgentTaskDefinitionArn?.Value, resolve(agents.task.taskDefinitionArn))
    assert.deepEqual(outputs.ClusterName?.Value, resolve(stack.symphony.cluster.clusterName))
    // The private task subnets, comma-separated, as --subnets takes them.
    assert.deepEqual(outputs.LoadAgentSubnetIds?.Value, {
      'Fn::Join': [',', resolve(stack.symphony.vpc.selectSubnets(DEFAULT_SUBNETS.tasks).subnetIds)],
    })
    // The policy for whoever runs the CLI: RunTask on this task definition, StopTask and DescribeTasks
    // in this cluster, PassRole on the task's two roles, nothing more.
    const policies = Object.values(template.findResources('AWS::IAM::ManagedPolicy'))
    assert.equal(policies.length, 1)
    const statements = policies[0]?.Properties.PolicyDocument.Statement as {
      Action: string | string[]
      Resource: unknown
      Condition?: unknown
    }[]
    assert.deepEqual(
      statements.map((s) => s.Action),
      ['ecs:RunTask', ['ecs:DescribeTasks', 'ecs:StopTask'], 'iam:PassRole'],
    )
    assert.deepEqual(statements[0]?.Resource, resolve(agents.task.taskDefinitionArn))
    const inCluster = { ArnEquals: { 'ecs:cluster': resolve(stack.symphony.cluster.clusterArn) } }
    assert.deepEqual(statements[0]?.Condition, inCluster)
    assert.deepEqual(statements[1]?.Condition, inCluster)
    const sorted = (values: unknown[]) => values.map((v) => JSON.stringify(v)).sort()
    assert.deepEqual(
      sorted(statements[2]?.Resource as unknown[]),
      sorted([resolve(agents.task.taskRole.roleArn), resolve(agents.task.obtainExecutionRole().roleArn)]),
    )
    // cdk deploy builds the agents' image from the load-agent target of the one Dockerfile.
    const manifest = JSON.parse(readFileSync(join(assembly.directory, 'Symphony.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { dockerFile?: string; dockerBuildTarget?: string } }>
    }
    const images = Object.values(manifest.dockerImages).map(
      (image) => `${image.source.dockerFile}#${image.source.dockerBuildTarget}`,
    )
    assert.ok(images.includes('infra/Dockerfile#load-agent'), `image assets: ${images.join(', ')}`)
  })

  it('without loadAgents there is no agent task definition, and none of its outputs', () => {
    const { template } = synthesize({})
    assert.throws(() => containerNamed(template, 'agent'), /0 containers named agent/)
    assert.equal(template.findOutputs('LoadAgentTaskDefinitionArn').LoadAgentTaskDefinitionArn, undefined)
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 0)
  })
})
