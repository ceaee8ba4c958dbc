import { Duration, RemovalPolicy, Stack, Tags, Token } from 'aws-cdk-lib'
import type * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { Cache } from './cache.js'
import { DashboardService } from './dashboard-service.js'
import { Database } from './database.js'
import { ARCHITECTURE_CONTEXT_KEY, assertRepositoryImages, imageFromRepository } from './fargate.js'
import { JournalStore } from './journal-store.js'
import { LoadAgents } from './load-agents.js'
import { DEFAULT_SUBNETS, Network } from './network.js'
import { metricsNamespace } from './observability/metrics.js'
import { Operations } from './observability/operations.js'
import { PublicEntry } from './public-entry.js'
import { parseServerSettings } from './server-settings.js'
import { Storage } from './storage.js'
import { addSymphonyOutputs } from './symphony-outputs.js'
import {
  type RedisSize,
  type ResolvedSizes,
  resolveSizes,
  type SymphonyProps,
  SymphonyPropsError,
} from './symphony-props.js'
import { type JournalRedis, SyncService } from './sync-service.js'

/**
 * The whole backend as one construct, for a stack of its own (the bundled app's `SymphonyStack`)
 * or beside other constructs in an existing stack: storage, network (or an existing VPC), Redis,
 * Postgres, the load balancer, the sync and dashboard services, alarms and the load agents.
 */
export class Symphony extends Construct {
  /** Every size after the preset filled what the props left out. */
  public readonly sizes: ResolvedSizes
  /** The VPC it runs in: `props.vpc`, or the one it made (`network.vpc`). */
  public readonly vpc: ec2.IVpc
  /** The VPC it made; unset when given one. */
  public readonly network: Network | undefined
  public readonly storage: Storage
  /** The ElastiCache Redis that holds the update journal; unset with the journal on MemoryDB. */
  public readonly cache: Cache | undefined
  /** The journal's MemoryDB cluster (`journal: { store: 'memorydb' }`); unset, the journal is in `cache`. */
  public readonly journal: JournalStore | undefined
  public readonly database: Database
  public readonly entry: PublicEntry
  public readonly cluster: ecs.Cluster
  public readonly sync: SyncService
  public readonly dashboard: DashboardService
  public readonly loadAgents: LoadAgents | undefined
  public readonly operations: Operations

  constructor(scope: Construct, id: string, props: SymphonyProps = {}) {
    super(scope, id)
    if (Token.isUnresolved(Stack.of(this).region)) {
      // The load balancer's access logs name the region's log-delivery account.
      throw Object.assign(
        new Error('Symphony: its stack needs a region (new Stack(app, id, { env: { region } }))'),
        { code: 'SYMPHONY_REGION_MISSING' },
      )
    }
    // Checked before any child exists: a refused construct leaves nothing half-built in the stack.
    const images = props.images ?? {}
    assertRepositoryImages([
      ...(images.sync ? [] : (['sync-server'] as const)),
      ...(images.dashboard ? [] : (['dashboard'] as const)),
      ...(props.loadAgents && !images.loadAgent ? (['load-agent'] as const) : []),
    ])
    const sizes = resolveSizes(props)
    this.sizes = sizes
    const name = props.name ?? Stack.of(this).stackName
    const architecture = props.cpuArchitecture ?? 'x86_64'
    const serverSettings = parseServerSettings(props.serverSettings, 'Symphony serverSettings')
    const removalPolicy = props.removalPolicy
    if (props.domainName && !props.certificate) {
      throw new SymphonyPropsError('domainName', 'needs certificate (a name is only for HTTPS clients)')
    }
    if (props.vpc && props.natGateways !== undefined) {
      throw new SymphonyPropsError('natGateways', 'only for the VPC the construct makes, not with vpc')
    }
    const shutdownTimeoutSeconds = props.shutdownTimeoutSeconds ?? 25
    if (
      !Number.isInteger(shutdownTimeoutSeconds) ||
      shutdownTimeoutSeconds < 5 ||
      shutdownTimeoutSeconds > 110
    ) {
      throw new SymphonyPropsError('shutdownTimeoutSeconds', 'must be a whole number from 5 to 110')
    }
    // Before any child: every task definition below reads it (`architectureOf`).
    this.node.setContext(ARCHITECTURE_CONTEXT_KEY, architecture)
    // The buckets refuse ACLs (bucket-owner object ownership), so access logs must be granted by
    // bucket policy: an app whose cdk.json predates that CDK default would fail synthesis without it.
    this.node.setContext('@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy', true)
    const image = (target: 'sync-server' | 'dashboard' | 'load-agent', prebuilt?: ecs.ContainerImage) =>
      prebuilt ?? imageFromRepository({ target, architecture })

    this.storage = new Storage(this, 'Storage', { removalPolicy })
    this.network = props.vpc
      ? undefined
      : new Network(this, 'Network', { natGateways: sizes.natGateways, logsBucket: this.storage.logsBucket })
    const vpc = props.vpc ?? (this.network as Network).vpc
    this.vpc = vpc
    const subnets = {
      public: props.subnets?.public ?? DEFAULT_SUBNETS.public,
      tasks: props.subnets?.tasks ?? DEFAULT_SUBNETS.tasks,
      data: props.subnets?.data ?? DEFAULT_SUBNETS.data,
    }
    const dataSubnets = vpc.selectSubnets(subnets.data)
    // The journal is all the servers keep in Redis: one store or the other, never both.
    const { journal, redis } = sizes
    const journalRedis: JournalRedis =
      journal.store === 'memorydb'
        ? {
            store: 'memorydb',
            cluster: new JournalStore(this, 'Journal', { name, vpc, subnets: dataSubnets, ...journal }),
          }
        : {
            store: 'elasticache',
            // resolveSizes leaves redis unset only with the journal on MemoryDB.
            cache: new Cache(this, 'Cache', { vpc, subnets: dataSubnets, ...(redis as RedisSize) }),
          }
    this.cache = journalRedis.store === 'elasticache' ? journalRedis.cache : undefined
    this.journal = journalRedis.store === 'memorydb' ? journalRedis.cluster : undefined
    this.database = new Database(this, 'Database', {
      vpc,
      subnets: subnets.data,
      ...sizes.database,
      removalPolicy,
    })
    this.entry = new PublicEntry(this, 'Entry', {
      vpc,
      subnets: subnets.public,
      logsBucket: this.storage.logsBucket,
      certificate: props.certificate,
      dashboardAllowedCidr: props.dashboard?.allowedCidr,
      idleTimeout: Duration.seconds(120),
    })
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    })
    this.cluster = cluster
    const namespace = metricsNamespace(name)
    this.sync = new SyncService(this, 'Sync', {
      name,
      image: image('sync-server', props.images?.sync),
      cluster,
      subnets: subnets.tasks,
      listener: this.entry.syncListener,
      storage: this.storage,
      journal: journalRedis,
      database: this.database,
      ...sizes.sync,
      authJwksUrl: props.authJwksUrl,
      webhookUrl: props.webhookUrl,
      serverSettings,
      allowedOrigins: props.allowedOrigins,
      shutdownTimeout: Duration.seconds(shutdownTimeoutSeconds),
      commit: props.commit,
      metricsNamespace: namespace,
    })
    this.dashboard = new DashboardService(this, 'Dashboard', {
      image: image('dashboard', props.images?.dashboard),
      cluster,
      subnets: subnets.tasks,
      listener: this.entry.dashboardListener,
      storage: this.storage,
      database: this.database,
      sync: this.sync,
      ...sizes.dashboard,
      allowedHosts: props.dashboard?.allowedHosts,
      domainName: props.domainName,
      metricsNamespace: namespace,
    })
    this.operations = new Operations(this, 'Operations', {
      name,
      namespace,
      cluster,
      entry: this.entry,
      sync: this.sync,
      dashboard: this.dashboard,
      cache: this.cache,
      database: this.database,
      storage: this.storage,
      alarmEmail: props.alarmEmail,
    })
    this.loadAgents = props.loadAgents
      ? new LoadAgents(this, 'LoadAgents', {
          cluster,
          subnets: subnets.tasks,
          image: image('load-agent', props.images?.loadAgent),
        })
      : undefined

    this.applyRemovalPolicy(removalPolicy)
    for (const [key, value] of Object.entries(props.tags ?? {})) Tags.of(this).add(key, value)
    if (props.outputs ?? true) addSymphonyOutputs(this, props.domainName)
  }

  /**
   * The removal policy on the data the parts did not take at creation: Redis, the journal and the
   * log groups. Unset, each keeps its own default (Redis deleted, log groups kept).
   */
  private applyRemovalPolicy(policy: RemovalPolicy | undefined): void {
    if (policy === undefined) return
    // Neither Redis nor MemoryDB data outlives its cluster without a snapshot; MemoryDB takes none
    // from CloudFormation, so SNAPSHOT keeps its cluster instead.
    if (policy !== RemovalPolicy.DESTROY) this.cache?.replicationGroup.applyRemovalPolicy(policy)
    if (policy !== RemovalPolicy.DESTROY) {
      this.journal?.cluster.applyRemovalPolicy(
        policy === RemovalPolicy.SNAPSHOT ? RemovalPolicy.RETAIN : policy,
      )
    }
    const logPolicy = policy === RemovalPolicy.SNAPSHOT ? RemovalPolicy.RETAIN : policy
    for (const child of this.node.findAll()) {
      if (child instanceof logs.LogGroup) child.applyRemovalPolicy(logPolicy)
    }
  }
}
