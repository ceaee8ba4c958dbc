import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Match, type Template } from 'aws-cdk-lib/assertions'
import { parseDashboardConfig } from '../../dashboard-server/src/config.js'
import { parseConfig } from '../../server/src/config.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { containerNamed, resourcesOf, sampleEnvironment } from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>
const props = (template: Template, type: string) =>
  resourcesOf(template, type).map(([, p]) => p as Properties)
const idOf = (template: Template, type: string, match: (p: Properties) => boolean) => {
  const found = resourcesOf(template, type).filter(([, p]) => match(p as Properties))
  assert.equal(found.length, 1, `exactly one ${type} matches`)
  return found[0]?.[0]
}
/** Logical ids of the two services' security groups. */
const serviceGroups = (template: Template) => ({
  syncSg: idOf(template, 'AWS::EC2::SecurityGroup', (p) => p.GroupDescription === 'Symphony sync servers'),
  dashboardSg: idOf(template, 'AWS::EC2::SecurityGroup', (p) => p.GroupDescription === 'Symphony dashboard'),
})
const sgRef = (rule: Properties) => rule.SourceSecurityGroupId?.['Fn::GetAtt']?.[0]
const targetSg = (rule: Properties) => rule.GroupId?.['Fn::GetAtt']?.[0]

describe('the synthesized stack, default settings (small, HTTP)', () => {
  let template: Template
  before(() => {
    template = synthesize().template
  })
  after(removeSynthesized)

  it('balances WebSockets by least outstanding requests, checks /healthz, and never sticks', () => {
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Port: 1234,
      TargetType: 'ip',
      HealthCheckPath: '/healthz',
      TargetGroupAttributes: Match.arrayWith([{ Key: 'stickiness.enabled', Value: 'false' }]),
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Port: 1234,
      TargetGroupAttributes: Match.arrayWith([
        { Key: 'load_balancing.algorithm.type', Value: 'least_outstanding_requests' },
      ]),
    })
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Port: 80, Protocol: 'HTTP' })
  })

  it('outlasts the server’s ping with its idle timeout, and drains as long as the server does', () => {
    const [balancer] = props(template, 'AWS::ElasticLoadBalancingV2::LoadBalancer')
    const idle = balancer?.LoadBalancerAttributes.find(
      (a: Properties) => a.Key === 'idle_timeout.timeout_seconds',
    )
    const pingSeconds = parseConfig({ AUTH: 'none' }).limits.pingIntervalMs / 1000
    assert.ok(Number(idle.Value) > pingSeconds, `idle timeout ${idle.Value} s > ping ${pingSeconds} s`)

    const server = containerNamed(template, 'server')
    const drainMs = Number(sampleEnvironment(server).SHUTDOWN_TIMEOUT_MS)
    const sync = props(template, 'AWS::ElasticLoadBalancingV2::TargetGroup').find((p) => p.Port === 1234)
    const delay = sync?.TargetGroupAttributes.find(
      (a: Properties) => a.Key === 'deregistration_delay.timeout_seconds',
    )
    assert.equal(Number(delay.Value) * 1000, drainMs, 'deregistration delay = SHUTDOWN_TIMEOUT_MS')
    assert.ok(server.StopTimeout && server.StopTimeout * 1000 > drainMs, 'SIGKILL only after the drain')
    assert.ok(server.StopTimeout <= 120, 'Fargate allows at most 120 s')
  })

  it('sizes the servers’ memory budget from the task’s memory, well inside it', () => {
    const [task] = props(template, 'AWS::ECS::TaskDefinition').filter((p) =>
      p.ContainerDefinitions.some((c: Properties) => c.Name === 'server'),
    )
    const taskBytes = Number(task?.Memory) * 1024 * 1024
    const { limits } = parseConfig(sampleEnvironment(containerNamed(template, 'server')))
    assert.equal(limits.memoryBudgetBytes, 320 * 1024 * 1024, 'small: 1 GiB tasks')
    assert.ok(limits.memoryBudgetBytes <= taskBytes / 3, `${limits.memoryBudgetBytes} of ${taskBytes}`)
  })

  it('scales the sync service on 50 % CPU between the size’s minimum and maximum', () => {
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 1,
      MaxCapacity: 3,
    })
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      TargetTrackingScalingPolicyConfiguration: {
        TargetValue: 50,
        PredefinedMetricSpecification: { PredefinedMetricType: 'ECSServiceAverageCPUUtilization' },
      },
    })
  })

  it('gives each sync task 65535 file descriptors, a read-only root and the image’s health check', () => {
    const server = containerNamed(template, 'server')
    assert.deepEqual(server.Ulimits, [{ Name: 'nofile', SoftLimit: 65535, HardLimit: 65535 }])
    assert.equal(server.ReadonlyRootFilesystem, true)
    assert.deepEqual(server.HealthCheck?.Command, [
      'CMD',
      'node',
      'server/dist/healthcheck.js',
      'PORT',
      '1234',
    ])
  })

  it('keeps the registry on demand, keyed as the server expects, expiring leases by TTL on expiresAt', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'room', KeyType: 'HASH' },
        { AttributeName: 'serverId', KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      SSESpecification: { SSEEnabled: true },
    })
  })

  it('encrypts every bucket, blocks public access, refuses plain HTTP, versions snapshots', () => {
    const buckets = resourcesOf(template, 'AWS::S3::Bucket')
    assert.equal(buckets.length, 2)
    for (const [id, bucket] of buckets as [string, Properties][]) {
      assert.equal(
        bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault
          .SSEAlgorithm,
        'AES256',
        id,
      )
      assert.deepEqual(bucket.PublicAccessBlockConfiguration, {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      })
      template.hasResourceProperties('AWS::S3::BucketPolicy', {
        Bucket: { Ref: id },
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      })
    }
    template.hasResourceProperties('AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
      LifecycleConfiguration: {
        // Every old version expires: none is kept past 30 days (the erasure bound in SECURITY.md).
        Rules: [
          Match.objectLike({
            NoncurrentVersionExpiration: { NoncurrentDays: 30, NewerNoncurrentVersions: Match.absent() },
          }),
        ],
      },
    })
    template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Retain' })
  })

  it('keeps Redis and Postgres encrypted, private and reachable only from the services', () => {
    template.hasResourceProperties('AWS::ElastiCache::ReplicationGroup', {
      TransitEncryptionEnabled: true,
      AtRestEncryptionEnabled: true,
      AuthToken: Match.objectLike({ 'Fn::Join': Match.anyValue() }),
    })
    const [redis] = props(template, 'AWS::ElastiCache::ReplicationGroup')
    assert.match(
      JSON.stringify(redis?.AuthToken),
      /resolve:secretsmanager/,
      'a dynamic reference, never plain text',
    )
    template.hasResourceProperties('AWS::RDS::DBInstance', {
      PubliclyAccessible: false,
      StorageEncrypted: true,
    })
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Snapshot',
      Properties: Match.objectLike({ DeletionProtection: true }),
    })

    // Their subnets have no route anywhere outside the VPC.
    const [cacheSubnets] = props(template, 'AWS::ElastiCache::SubnetGroup')
    const [dbSubnets] = props(template, 'AWS::RDS::DBSubnetGroup')
    const dataSubnets = [...(cacheSubnets?.SubnetIds ?? []), ...(dbSubnets?.SubnetIds ?? [])].map(
      (s: Properties) => s.Ref,
    )
    const routeTableOf = new Map(
      props(template, 'AWS::EC2::SubnetRouteTableAssociation').map((a) => [
        a.SubnetId.Ref,
        a.RouteTable?.Ref ?? a.RouteTableId.Ref,
      ]),
    )
    const routedTables = new Set(props(template, 'AWS::EC2::Route').map((r) => r.RouteTableId.Ref))
    for (const subnet of dataSubnets) {
      assert.ok(routeTableOf.has(subnet), `${subnet} has a route table`)
      assert.ok(!routedTables.has(routeTableOf.get(subnet)), `${subnet} routes nowhere outside the VPC`)
    }

    // Every way in to either is from another security group, never an address range.
    const { syncSg, dashboardSg } = serviceGroups(template)
    const ingress = props(template, 'AWS::EC2::SecurityGroupIngress')
    const redisIn = ingress.filter((rule) => rule.FromPort === 6380)
    assert.deepEqual(redisIn.map(sgRef), [syncSg])
    const postgresIn = ingress.filter(
      (rule) => rule.FromPort === 5432 || JSON.stringify(rule.FromPort).includes('Endpoint.Port'),
    )
    assert.deepEqual(postgresIn.map(sgRef).sort(), [dashboardSg, syncSg].sort())
    for (const sg of props(template, 'AWS::EC2::SecurityGroup')) {
      if (/Redis|RDS|Database/i.test(sg.GroupDescription))
        assert.equal(sg.SecurityGroupIngress, undefined, sg.GroupDescription)
    }
  })

  it('pins Postgres to a minor version RDS creates (cfn-lint W3691), and no DependsOn repeats a Ref (W3005)', () => {
    const [postgres] = props(template, 'AWS::RDS::DBInstance')
    assert.match(String(postgres?.EngineVersion), /^16\.\d+$/, 'a major.minor version, not the bare major')
    assert.equal(postgres?.AutoMinorVersionUpgrade, true, 'RDS still applies later minors itself')
    for (const [id, resource] of Object.entries(template.toJSON().Resources as Record<string, Properties>)) {
      const referenced = new Set(
        [...JSON.stringify(resource.Properties ?? {}).matchAll(/\{"(?:Ref|Fn::GetAtt)":\[?"([^"]+)"/g)].map(
          (m) => m[1],
        ),
      )
      const redundant = [resource.DependsOn ?? []].flat().filter((dep: string) => referenced.has(dep))
      assert.deepEqual(redundant, [], `${id} depends on what it already references`)
    }
  })

  it('opens the internal port only to other sync tasks and the dashboard', () => {
    const { syncSg, dashboardSg } = serviceGroups(template)
    const internal = props(template, 'AWS::EC2::SecurityGroupIngress').filter(
      (rule) => rule.FromPort === 9234,
    )
    assert.deepEqual(internal.map(sgRef).sort(), [dashboardSg, syncSg].sort())
    assert.ok(internal.every((rule) => targetSg(rule) === syncSg && rule.ToPort === 9234))
    const syncGroup = props(template, 'AWS::EC2::SecurityGroup').find(
      (p) => p.GroupDescription === 'Symphony sync servers',
    )
    assert.ok(
      (syncGroup?.SecurityGroupIngress ?? []).every((rule: Properties) => rule.FromPort !== 9234),
      'no address range reaches the internal port',
    )
  })

  it('scopes IAM to the stack’s own bucket prefix, table and secrets', () => {
    const policies = props(template, 'AWS::IAM::Policy')
    const statementsOf = (rolePrefix: string) =>
      policies
        .filter((p) => p.Roles.some((r: Properties) => String(r.Ref).startsWith(rolePrefix)))
        .flatMap((p) => p.PolicyDocument.Statement as Properties[])
    const actions = (statements: Properties[]) => statements.flatMap((s) => [s.Action].flat())

    const execChannels = [
      'ssmmessages:CreateControlChannel',
      'ssmmessages:CreateDataChannel',
      'ssmmessages:OpenControlChannel',
      'ssmmessages:OpenDataChannel',
    ]
    for (const statement of policies.flatMap((p) => p.PolicyDocument.Statement as Properties[])) {
      if (statement.Resource === '*') {
        assert.ok(
          statement.Action === 'ecr:GetAuthorizationToken' ||
            JSON.stringify(statement.Action) === JSON.stringify(execChannels),
          `only actions without resource-level permissions on *: ${JSON.stringify(statement.Action)}`,
        )
      }
    }
    // The metrics sidecar writes EMF records to its own log group, and only there.
    const emfWrites = ['logs:CreateLogStream', 'logs:DescribeLogStreams', 'logs:PutLogEvents']
    const sync = statementsOf('SyncTaskTaskRole')
    assert.deepEqual(actions(sync).sort(), [
      'dynamodb:BatchWriteItem',
      'dynamodb:DeleteItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      ...emfWrites,
      's3:GetObject',
      's3:GetObjectVersion',
      's3:ListBucket',
      's3:ListBucketVersions',
      's3:PutObject',
    ])
    const dashboard = statementsOf('DashboardTaskTaskRole')
    assert.ok(
      actions(dashboard).every(
        (a) =>
          /^s3:(Get|List)|^dynamodb:(Get|BatchGet|Query|Scan|Describe|ConditionCheck)/.test(a) ||
          emfWrites.includes(a) ||
          execChannels.includes(a),
      ),
      'read only, apart from its metrics and ECS Exec',
    )
    assert.ok(
      execChannels.every((a) => actions(dashboard).includes(a)),
      'ECS Exec for port forwarding',
    )
    assert.ok(!actions(sync).some((a) => a.startsWith('ssmmessages:')), 'no ECS Exec into sync servers')
    for (const statement of [...sync, ...dashboard]) {
      if (String(statement.Action).startsWith('logs:')) {
        assert.match(JSON.stringify(statement.Resource), /MetricsEmf/, 'only the EMF log group')
      }
      const resource = JSON.stringify(statement.Resource)
      if (String(statement.Action).startsWith('s3:Get') || String(statement.Action).includes('PutObject')) {
        assert.match(resource, /StorageSnapshots.*\/rooms\/\*/, 'objects under the snapshots prefix only')
      }
      if (actions([statement]).some((a) => a.startsWith('s3:List'))) {
        assert.deepEqual(statement.Condition, { StringLike: { 's3:prefix': ['rooms/*'] } })
      }
      if (String(statement.Action).includes('dynamodb')) assert.match(resource, /StorageRegistry/)
    }
    const secretsRead = statementsOf('SyncTaskExecutionRole').find((s) =>
      actions([s]).includes('secretsmanager:GetSecretValue'),
    )
    const refs = ((secretsRead?.Resource ?? []) as Properties[]).map((r) => String(r.Ref)).sort()
    const expected = [
      /^CacheAuthToken/,
      /^DatabasePostgresSecretAttachment/,
      /^SyncApiSecret/,
      /^SyncAuthSecret/,
      /^SyncInternalToken/,
    ]
    assert.equal(refs.length, expected.length, refs.join(', '))
    for (const [i, pattern] of expected.entries()) assert.match(refs[i] ?? '', pattern)
  })

  it('hands each service exactly the settings its own parser accepts', () => {
    const sync = parseConfig(sampleEnvironment(containerNamed(template, 'server')))
    const { journal, registry, snapshots, metadata } = sync.backends
    // A shared registry takes a Redis journal: here the cluster's Redis (PUBSUB), on ElastiCache.
    assert.equal(journal.kind, 'redis')
    assert.match(
      journal.kind === 'redis' ? journal.url : '',
      /^rediss:\/\/:secret-x+@sample\.internal\.example:6380/,
    )
    assert.equal(registry.kind, 'dynamodb')
    assert.equal(snapshots.kind, 's3')
    assert.deepEqual(snapshots.kind === 's3' && [snapshots.bucket, snapshots.prefix], [
      'sample-storagesnapshotsecd13464',
      'rooms/',
    ])
    assert.equal(metadata.kind, 'postgres')
    assert.match(
      metadata.kind === 'postgres' ? metadata.url : '',
      /^postgres:\/\/symphony:secret-x+@.*sslmode=verify-full&sslrootcert=\/app\/certs\/aws-rds-ca\.pem$/,
    )
    assert.equal(sync.internal?.port, 9234)
    assert.equal(sync.auth.mode, 'jwt')
    assert.equal(sync.devTokenSecret, null, 'the development token route is never on in a deployment')
    assert.equal(JSON.stringify(template.toJSON()).includes('DEV_TOKEN_ROUTE'), false)
    assert.equal(sync.shutdownTimeoutMs, 25_000)

    const dashboard = parseDashboardConfig(sampleEnvironment(containerNamed(template, 'dashboard')))
    assert.ok(dashboard.token && dashboard.internalToken, 'token and internal token from Secrets Manager')
    assert.match(dashboard.databaseUrl, /^postgres:\/\/symphony:secret-x+@/)
    assert.equal(dashboard.snapshots, 's3://sample-storagesnapshotsecd13464/rooms/')
    // Its listener's name (and loopback ones: SSM port forwarding, health checks, the metrics sidecar).
    assert.deepEqual(dashboard.allowedHosts, ['sample.internal.example'])
  })

  it('keeps /metrics off the internet and outputs what a deployer needs', () => {
    template.hasResourceProperties('AWS::ElasticLoadBalancingV2::ListenerRule', {
      Conditions: [{ Field: 'path-pattern', PathPatternConfig: { Values: ['/metrics', '/metrics/*'] } }],
      Actions: [
        Match.objectLike({
          Type: 'fixed-response',
          FixedResponseConfig: Match.objectLike({ StatusCode: '404' }),
        }),
      ],
    })
    const outputs = template.findOutputs('*')
    for (const name of [
      'WebSocketUrl',
      'DashboardUrl',
      'SnapshotsBucketName',
      'RegistryTableName',
      'DashboardTokenSecret',
      'AuthSecret',
    ]) {
      assert.ok(outputs[name], `output ${name}`)
    }
    assert.equal(outputs.WebSocketUrl?.Value['Fn::Join'][1][0], 'ws://')
    assert.deepEqual(outputs.DashboardUrl?.Value['Fn::Join'][1].at(-1), ':8080')
  })
})
