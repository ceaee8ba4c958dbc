import { Duration, Stack } from 'aws-cdk-lib'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager'
import { Construct } from 'constructs'
import { generatedSecret, grantSnapshots } from './access.js'
import type { Cache } from './cache.js'
import type { Database } from './database.js'
import { containerHealthCheck, containerLogs, fargateTask, privateService } from './fargate.js'
import type { JournalStore } from './journal-store.js'
import { MetricsCollector } from './observability/collector.js'
import { SYNC_SERVER_METRICS } from './observability/metrics.js'
import type { Storage } from './storage.js'

/**
 * Where the servers' update journal lives: the cache, handed over as the cluster's Redis (`PUBSUB`),
 * or a MemoryDB cluster of its own (`JOURNAL`).
 */
export type JournalRedis =
  | { store: 'elasticache'; cache: Cache }
  | { store: 'memorydb'; cluster: JournalStore }

export interface SyncServiceProps {
  /** The deployment's name: its secrets are `<name>/api-secret` and `<name>/webhook-signing-key`. */
  name: string
  /** The sync-server image, for the tasks' CPU architecture. */
  image: ecs.ContainerImage
  cluster: ecs.ICluster
  subnets: ec2.SubnetSelection
  listener: elbv2.ApplicationListener
  storage: Storage
  journal: JournalRedis
  database: Database
  cpu: number
  memoryMiB: number
  minTasks: number
  maxTasks: number
  /** Verify tokens against this JWKS; without it, an HS256 secret is generated here. */
  authJwksUrl: string | undefined
  /** WEBHOOK_URL for the servers, if set; its signing key is generated here. */
  webhookUrl: string | undefined
  /** More server settings (`-c serverSettings`); the ones set here win. */
  serverSettings: Readonly<Record<string, string>>
  /** ALLOWED_ORIGINS for the servers, if set. */
  allowedOrigins: string | undefined
  /** The server's SIGTERM drain (SHUTDOWN_TIMEOUT_MS). */
  shutdownTimeout: Duration
  /** SYMPHONY_COMMIT: which build the tasks run, in their `symphony_build_info`. */
  commit: string | undefined
  /** The CloudWatch namespace the metrics sidecar publishes the servers' series to. */
  metricsNamespace: string
}

export const SYNC_PORT = 1234

/** The sync-server image's CMD (infra/Dockerfile), run by the webhook wrapper below. */
export const SYNC_SERVER_COMMAND = ['node', 'server/dist/main.js']

/**
 * The server wants WEBHOOK_SECRET as `whsec_<base64>` (Standard Webhooks). Secrets Manager generates
 * no prefix and ECS injects a secret as stored, so the stored value is the base64 part only (letters
 * and digits are base64 too) and the task's shell prepends `whsec_` in memory before it runs the server.
 */
const WEBHOOK_WRAPPER = 'export WEBHOOK_SECRET="whsec_$WEBHOOK_SIGNING_KEY"; exec "$@"'
export const INTERNAL_PORT = 9234

/**
 * The server's MEMORY_BUDGET_BYTES in a task of `memoryMiB`: 5/16 of it (320 MiB of the default
 * 1 GiB), leaving the rest to the process's baseline, the rooms' documents and the metrics sidecar.
 */
export function memoryBudgetBytes(memoryMiB: number): number {
  return Math.floor((memoryMiB * 5) / 16) * 1024 * 1024
}

/**
 * The sync servers: Fargate tasks behind the load balancer (least outstanding requests, no
 * stickiness), scaling on CPU, relaying each room's traffic to its owner on the internal port.
 */
export class SyncService extends Construct {
  public readonly service: ecs.FargateService
  public readonly securityGroup: ec2.SecurityGroup
  public readonly targetGroup: elbv2.ApplicationTargetGroup
  /** Guards the internal port; the dashboard presents it too. */
  public readonly internalToken: secretsmanager.Secret
  /** API_SECRET: the REST API's bearer secret (`Authorization: Bearer …`), so the API is always on. */
  public readonly apiSecret: secretsmanager.Secret
  /** Its fixed name, for the outputs (CDK's `secretName` is parsed out of the ARN, suffix and all). */
  public readonly apiSecretName: string
  /** The base64 part of WEBHOOK_SECRET (receivers verify with `whsec_<it>`); absent without a webhook URL. */
  public readonly webhookKey: secretsmanager.Secret | undefined
  /** Its fixed name, for the outputs. */
  public readonly webhookKeyName: string
  /** The HS256 key the app's backend signs room tokens with (absent with a JWKS URL). */
  public readonly authSecret: secretsmanager.Secret | undefined
  /** The autoscaling ceiling, for the alarm that fires when the service sits at it. */
  public readonly maxTasks: number
  /** The autoscaling floor: equal to `maxTasks`, the fleet is fixed and that alarm is left out. */
  public readonly minTasks: number

  constructor(scope: Construct, id: string, props: SyncServiceProps) {
    super(scope, id)
    const { storage, journal, database } = props
    this.maxTasks = props.maxTasks
    this.minTasks = props.minTasks
    this.internalToken = generatedSecret(
      this,
      'InternalToken',
      'Symphony INTERNAL_TOKEN (relay links and requests between sync servers)',
      48,
    )
    this.authSecret = props.authJwksUrl
      ? undefined
      : generatedSecret(this, 'AuthSecret', 'Symphony AUTH_SECRET: sign room tokens (HS256) with it', 64)

    this.apiSecretName = `${props.name}/api-secret`
    this.apiSecret = generatedSecret(
      this,
      'ApiSecret',
      'Symphony API_SECRET: the REST API bearer secret (Authorization: Bearer <this>)',
      48,
      this.apiSecretName,
    )
    this.webhookKeyName = `${props.name}/webhook-signing-key`
    // 44 letters and digits: whole base64 quads, 33 bytes of key (the server wants 16 at least).
    this.webhookKey = props.webhookUrl
      ? generatedSecret(
          this,
          'WebhookSigningKey',
          'Symphony WEBHOOK_SECRET without its whsec_ prefix: receivers verify with whsec_<this>',
          44,
          this.webhookKeyName,
        )
      : undefined

    const task = fargateTask(this, props.cpu, props.memoryMiB)
    // The server journals to `JOURNAL` when set, else to the cluster's Redis (`PUBSUB`).
    const redis: {
      environment: Record<string, string>
      secrets: Record<string, ecs.Secret>
      store: Cache | JournalStore
    } =
      journal.store === 'memorydb'
        ? {
            environment: { JOURNAL: journal.cluster.url, JOURNAL_CLUSTER: '1' },
            secrets: { JOURNAL_PASSWORD: ecs.Secret.fromSecretsManager(journal.cluster.password) },
            store: journal.cluster,
          }
        : {
            environment: { PUBSUB: journal.cache.url },
            secrets: { PUBSUB_PASSWORD: ecs.Secret.fromSecretsManager(journal.cache.authToken) },
            store: journal.cache,
          }
    const secrets: Record<string, ecs.Secret> = {
      INTERNAL_TOKEN: ecs.Secret.fromSecretsManager(this.internalToken),
      ...redis.secrets,
      DATABASE_PASSWORD: ecs.Secret.fromSecretsManager(database.secret, 'password'),
      API_SECRET: ecs.Secret.fromSecretsManager(this.apiSecret),
      ...(this.authSecret ? { AUTH_SECRET: ecs.Secret.fromSecretsManager(this.authSecret) } : {}),
      ...(this.webhookKey ? { WEBHOOK_SIGNING_KEY: ecs.Secret.fromSecretsManager(this.webhookKey) } : {}),
    }
    const container = task.addContainer('server', {
      image: props.image,
      environment: {
        ...props.serverSettings,
        NODE_ENV: 'production',
        PORT: String(SYNC_PORT),
        INTERNAL_PORT: String(INTERNAL_PORT),
        ...redis.environment,
        REGISTRY: `dynamodb://${storage.registryTable.tableName}`,
        SNAPSHOTS: storage.snapshotsUrl,
        DATABASE_URL: database.url,
        AWS_REGION: Stack.of(this).region,
        SHUTDOWN_TIMEOUT_MS: String(props.shutdownTimeout.toMilliseconds()),
        MEMORY_BUDGET_BYTES: String(memoryBudgetBytes(props.memoryMiB)),
        ...(props.authJwksUrl ? { AUTH_JWKS_URL: props.authJwksUrl } : {}),
        ...(props.webhookUrl ? { WEBHOOK_URL: props.webhookUrl } : {}),
        ...(props.allowedOrigins ? { ALLOWED_ORIGINS: props.allowedOrigins } : {}),
        ...(props.commit ? { SYMPHONY_COMMIT: props.commit } : {}),
      },
      secrets,
      ...(this.webhookKey
        ? { entryPoint: ['/bin/sh', '-c', WEBHOOK_WRAPPER, 'sh'], command: SYNC_SERVER_COMMAND }
        : {}),
      portMappings: [
        { containerPort: SYNC_PORT, name: 'websocket' },
        { containerPort: INTERNAL_PORT, name: 'internal' },
      ],
      // One file descriptor per WebSocket: the default 1024 would cap a task at about a thousand users.
      ulimits: [{ name: ecs.UlimitName.NOFILE, softLimit: 65535, hardLimit: 65535 }],
      healthCheck: containerHealthCheck('PORT', SYNC_PORT),
      // The drain, plus a margin before SIGKILL.
      stopTimeout: props.shutdownTimeout.plus(Duration.seconds(5)),
      readonlyRootFilesystem: true,
      logging: containerLogs(this, 'sync', logs.RetentionDays.ONE_MONTH),
    })
    new MetricsCollector(this, 'Metrics', {
      task,
      cluster: props.cluster,
      port: SYNC_PORT,
      service: 'sync',
      namespace: props.metricsNamespace,
      metrics: SYNC_SERVER_METRICS,
    })
    grantSnapshots(task.taskRole, storage, ['s3:GetObject', 's3:PutObject'])
    task.taskRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:BatchWriteItem'],
        resources: [storage.registryTable.tableArn],
      }),
    )

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.cluster.vpc,
      description: 'Symphony sync servers',
      allowAllOutbound: true,
    })
    this.securityGroup.addIngressRule(
      this.securityGroup,
      ec2.Port.tcp(INTERNAL_PORT),
      'relay links and requests between sync servers (internal port)',
    )
    this.service = privateService(this, {
      cluster: props.cluster,
      task,
      subnets: props.subnets,
      securityGroup: this.securityGroup,
      loadBalanced: true,
    })
    redis.store.allowFrom(this.securityGroup)
    database.allowFrom(this.securityGroup, 'metadata from the sync servers')

    this.targetGroup = new elbv2.ApplicationTargetGroup(this, 'Targets', {
      vpc: props.cluster.vpc,
      targetType: elbv2.TargetType.IP,
      protocol: elbv2.ApplicationProtocol.HTTP,
      port: SYNC_PORT,
      // Each WebSocket is one long request: the least busy task gets the next one.
      loadBalancingAlgorithmType: elbv2.TargetGroupLoadBalancingAlgorithmType.LEAST_OUTSTANDING_REQUESTS,
      healthCheck: {
        path: '/healthz',
        healthyHttpCodes: '200',
        interval: Duration.seconds(10),
        timeout: Duration.seconds(5),
        healthyThresholdCount: 2,
        unhealthyThresholdCount: 3,
      },
      // ECS waits for this before SIGTERM; the server then drains within the same span.
      deregistrationDelay: props.shutdownTimeout,
      targets: [
        this.service.loadBalancerTarget({ containerName: container.containerName, containerPort: SYNC_PORT }),
      ],
    })
    // Any task can serve any room (it relays to the room's owner), so no stickiness.
    this.targetGroup.setAttribute('stickiness.enabled', 'false')
    props.listener.addTargetGroups('Sync', { targetGroups: [this.targetGroup] })

    const scaling = this.service.autoScaleTaskCount({
      minCapacity: props.minTasks,
      maxCapacity: props.maxTasks,
    })
    scaling.scaleOnCpuUtilization('Cpu', {
      targetUtilizationPercent: 50,
      scaleOutCooldown: Duration.seconds(60),
      scaleInCooldown: Duration.seconds(300),
    })
  }

  /** Lets `peer` (the dashboard) read live rooms from the internal port. */
  allowInternalFrom(peer: ec2.ISecurityGroup, description: string): void {
    this.securityGroup.addIngressRule(peer, ec2.Port.tcp(INTERNAL_PORT), description)
  }
}
