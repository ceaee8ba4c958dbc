import { CfnOutput, Duration, Fn, Stack, type StackProps } from 'aws-cdk-lib'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import type { Construct } from 'constructs'
import { Cache } from './cache.js'
import { DashboardService } from './dashboard-service.js'
import { Database } from './database.js'
import { ARCHITECTURE_CONTEXT_KEY, imageFromRepository } from './fargate.js'
import { JournalStore } from './journal-store.js'
import { LoadAgents } from './load-agents.js'
import { Network } from './network.js'
import { metricsNamespace } from './observability/metrics.js'
import { Operations } from './observability/operations.js'
import { PublicEntry } from './public-entry.js'
import type { SymphonySettings } from './settings.js'
import { Storage } from './storage.js'
import { SyncService } from './sync-service.js'

export interface SymphonyStackProps extends StackProps {
  settings: SymphonySettings
}

/** The whole backend in one stack: `cdk deploy` stands it up, `cdk destroy` takes it down. */
export class SymphonyStack extends Stack {
  public readonly storage: Storage
  public readonly network: Network
  public readonly cache: Cache
  /** The journal's own MemoryDB cluster (`journalStore=memorydb`); unset, it shares the cache. */
  public readonly journal: JournalStore | undefined
  public readonly database: Database
  public readonly entry: PublicEntry
  public readonly cluster: ecs.Cluster
  public readonly sync: SyncService
  public readonly dashboard: DashboardService
  public readonly loadAgents: LoadAgents | undefined
  public readonly operations: Operations

  constructor(scope: Construct, id: string, props: SymphonyStackProps) {
    super(scope, id, props)
    const { settings } = props
    // Before any child: every task definition and image below reads it (`architectureOf`).
    this.node.setContext(ARCHITECTURE_CONTEXT_KEY, settings.cpuArchitecture)
    this.storage = new Storage(this, 'Storage', { retainData: settings.retainData })
    this.network = new Network(this, 'Network', {
      natGateways: settings.natGateways,
      logsBucket: this.storage.logsBucket,
    })
    const { vpc } = this.network
    const dataSubnets = vpc.selectSubnets(this.network.dataSubnets)
    this.cache = new Cache(this, 'Cache', { vpc, subnets: dataSubnets, ...settings.redis })
    const { journal } = settings
    this.journal =
      journal.store === 'memorydb'
        ? new JournalStore(this, 'Journal', { vpc, subnets: dataSubnets, ...journal })
        : undefined
    this.database = new Database(this, 'Database', {
      vpc,
      subnets: this.network.dataSubnets,
      ...settings.database,
      retainData: settings.retainData,
    })
    this.entry = new PublicEntry(this, 'Entry', {
      vpc,
      logsBucket: this.storage.logsBucket,
      certificateArn: settings.certificateArn,
      dashboardAllowedCidr: settings.dashboard.allowedCidr,
      idleTimeout: Duration.seconds(120),
    })
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    })
    this.cluster = cluster
    this.sync = new SyncService(this, 'Sync', {
      cluster,
      subnets: this.network.taskSubnets,
      listener: this.entry.syncListener,
      storage: this.storage,
      cache: this.cache,
      journal: this.journal,
      database: this.database,
      ...settings.sync,
      authJwksUrl: settings.authJwksUrl,
      webhookUrl: settings.webhookUrl,
      serverSettings: settings.serverSettings,
      allowedOrigins: settings.allowedOrigins,
      shutdownTimeout: Duration.seconds(settings.shutdownTimeoutSeconds),
      commit: settings.commit,
      metricsNamespace: metricsNamespace(settings.stackName),
    })
    this.dashboard = new DashboardService(this, 'Dashboard', {
      cluster,
      subnets: this.network.taskSubnets,
      listener: this.entry.dashboardListener,
      storage: this.storage,
      database: this.database,
      sync: this.sync,
      ...settings.dashboard,
      domainName: settings.domainName,
      metricsNamespace: metricsNamespace(settings.stackName),
    })
    this.operations = new Operations(this, 'Operations', {
      namespace: metricsNamespace(settings.stackName),
      cluster,
      entry: this.entry,
      sync: this.sync,
      dashboard: this.dashboard,
      cache: this.cache,
      database: this.database,
      storage: this.storage,
      alarmEmail: settings.alarmEmail,
    })
    if (settings.loadAgents) {
      this.loadAgents = new LoadAgents(this, 'LoadAgents', {
        cluster,
        subnets: this.network.taskSubnets,
        image: imageFromRepository({ target: 'load-agent', architecture: settings.cpuArchitecture }),
      })
    }

    const urls = this.entry.urls(settings.domainName)
    const output = (name: string, value: string, description: string) =>
      new CfnOutput(this, name, { value, description })
    output('WebSocketUrl', urls.webSocket, 'Point the client library (createClient({ url })) here')
    output('DashboardUrl', urls.dashboard, 'The operators’ dashboard; sign in with the DashboardTokenSecret')
    output(
      'SnapshotsBucketName',
      this.storage.snapshotsBucket.bucketName,
      'Room snapshots (<room>.ybin under rooms/)',
    )
    output('RegistryTableName', this.storage.registryTable.tableName, 'Which sync server holds which room')
    output(
      'DashboardTokenSecret',
      this.dashboard.token.secretArn,
      'aws secretsmanager get-secret-value --secret-id <this>',
    )
    output(
      'OperationsDashboardUrl',
      `https://console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards:name=${this.operations.dashboard.dashboardName}`,
      'The CloudWatch dashboard: alarms, users, rooms, latency, the managed parts',
    )
    output('AlarmTopicArn', this.operations.topic.topicArn, 'Every alarm notifies this SNS topic')
    output(
      'ClusterName',
      cluster.clusterName,
      'The ECS cluster (ECS Exec and SSM port forwarding; symphony-loadtest ecs --cluster)',
    )
    output(
      'DashboardServiceName',
      this.dashboard.service.serviceName,
      'The dashboard service (aws ecs list-tasks --service-name <this>)',
    )
    if (this.loadAgents) {
      const agents = this.loadAgents
      output(
        'LoadAgentTaskDefinitionArn',
        agents.task.taskDefinitionArn,
        'symphony-loadtest ecs --task-definition',
      )
      output('LoadAgentSubnetIds', Fn.join(',', agents.subnetIds), 'symphony-loadtest ecs --subnets')
      output(
        'LoadAgentSecurityGroupId',
        agents.securityGroup.securityGroupId,
        'symphony-loadtest ecs --security-groups',
      )
      output(
        'LoadAgentRunPolicyArn',
        agents.runPolicy.managedPolicyArn,
        'Attach to whoever runs symphony-loadtest ecs',
      )
    }
    // The name, not the ARN's value nor the secret's: whoever may read it fetches it themselves.
    output(
      'ApiSecretName',
      this.sync.apiSecretName,
      'The REST API bearer secret: aws secretsmanager get-secret-value --secret-id <this>',
    )
    if (this.sync.webhookKey) {
      output(
        'WebhookSigningKeyName',
        this.sync.webhookKeyName,
        'Receivers verify webhooks with whsec_ followed by this secret’s value',
      )
    }
    if (this.sync.authSecret) {
      output(
        'AuthSecret',
        this.sync.authSecret.secretArn,
        'The HS256 key your backend signs room tokens with',
      )
    }
  }
}
