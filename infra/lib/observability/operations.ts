import { Duration, Validations } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import type * as ecs from 'aws-cdk-lib/aws-ecs'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import * as sns from 'aws-cdk-lib/aws-sns'
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions'
import { Construct } from 'constructs'
import type { Cache } from '../cache.js'
import type { DashboardService } from '../dashboard-service.js'
import type { Database } from '../database.js'
import type { PublicEntry } from '../public-entry.js'
import type { Storage } from '../storage.js'
import type { SyncService } from '../sync-service.js'
import { operationsDashboard } from './dashboard.js'
import {
  CLUSTER_DIMENSION,
  DEPENDENCY_DIMENSION,
  SERVICE_DIMENSION,
  SYNC_DEPENDENCIES,
  type SyncServerMetricName,
} from './metrics.js'

/** Thresholds, each with why. docs/operations.md ("Alarms") lists them with what to do. */
export const THRESHOLDS = {
  /** Any failed snapshot write: a room's latest state is only in the journal until one succeeds. */
  snapshotFailures: 1,
  /** Snapshots every 30 s keep the backlog small; this many unsaved updates for 15 min means they stall. */
  journalBacklogUpdates: 50_000,
  /** A p99 event-loop lag of 200 ms delays every socket's frames on that server visibly. */
  eventLoopLagP99Seconds: 0.2,
  /** Applying and fanning out one update should take milliseconds; 100 ms at p99 is felt as lag. */
  updateHandlingP99Seconds: 0.1,
  /** A handful of 5xx in five minutes is noise (a deploy); ten or more is a failing server or target. */
  http5xxPerFiveMinutes: 10,
  /** Any unhealthy target for three minutes: a task is failing its health check. */
  unhealthyTargets: 1,
  /** Redis is single-threaded: its engine thread past 80 % delays every journal append and read. */
  redisEngineCpuPercent: 80,
  /** Past 80 % of maxmemory, Redis starts evicting or refusing writes (journal streams). */
  redisMemoryPercent: 80,
  /** Any throttled request to the registry: leases may lapse and rooms load from snapshots. */
  dynamoDbThrottles: 1,
  /** Metadata writes are batched; a database busy past 80 % for 15 min is undersized. */
  rdsCpuPercent: 80,
  /**
   * Free bytes under which the database pages: 2 GiB, or 5 % of the storage allocated at creation if
   * that is less (see `databaseFreeStorageFloorBytes`). RDS storage autoscaling grows the disk (up to
   * 4×) once free space is under 10 % of the *current* allocation, so a fraction of the initial size
   * would fire on every routine growth of the first disk and mean ever less as it grows. A fixed
   * floor below autoscaling's own trigger fires only when autoscaling cannot keep up (its 6-hour
   * cooldown) or has reached its ceiling; 2 GiB still leaves Postgres room for WAL and a vacuum.
   */
  rdsFreeStorageFloorGiB: 2,
  /** The floor never reaches autoscaling's trigger on the first disk (10 % free): half of it. */
  rdsFreeStorageInitialFraction: 0.05,
  /** A dependency down (`symphony_dependency_up` 0) on any sync server for three minutes. */
  dependencyDownMinutes: 3,
} as const

/** The free-storage alarm's threshold in bytes for a database created with `storageGiB`. */
export function databaseFreeStorageFloorBytes(storageGiB: number): number {
  const gib = 1024 ** 3
  return Math.min(
    THRESHOLDS.rdsFreeStorageFloorGiB * gib,
    Math.round(storageGiB * gib * THRESHOLDS.rdsFreeStorageInitialFraction),
  )
}

export interface OperationsProps {
  /** The deployment's name, which every alarm's name starts with. */
  name: string
  namespace: string
  cluster: ecs.ICluster
  entry: PublicEntry
  sync: SyncService
  dashboard: DashboardService
  /** The ElastiCache Redis, when the journal is on it; its alarms go with it. */
  cache: Cache | undefined
  database: Database
  storage: Storage
  /** Email the alarm topic notifies; unset, subscribe to the topic yourself. */
  alarmEmail: string | undefined
}

/**
 * What operators watch: alarms on the servers' own series and on every managed part, all notifying
 * one SNS topic, and a CloudWatch dashboard with the same metrics side by side.
 */
export class Operations extends Construct {
  public readonly topic: sns.Topic
  public readonly alarms: cloudwatch.Alarm[] = []
  public readonly dashboard: cloudwatch.Dashboard

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id)
    const { sync, entry, cache, database, storage } = props
    this.topic = new sns.Topic(this, 'Alarms', { displayName: 'Symphony alarms', enforceSSL: true })
    Validations.of(this.topic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry alarm names and numbers, nothing secret. CloudWatch cannot publish to ' +
        'a topic under the AWS-managed SNS key; a customer key (and its policy for CloudWatch) would add ' +
        'cost and a moving part without protecting anything. Publishing requires TLS (enforceSSL).',
    })
    if (props.alarmEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail))
    const notify = new actions.SnsAction(this.topic)

    const alarm = (
      name: string,
      description: string,
      metric: cloudwatch.IMetric,
      options: {
        threshold: number
        comparison: cloudwatch.ComparisonOperator
        periods: number
        missing: cloudwatch.TreatMissingData
      },
    ) => {
      const created = new cloudwatch.Alarm(this, name, {
        // What the email's subject shows: the stack, then the alarm's name in docs/operations.md.
        alarmName: `${props.name}-${name}`,
        metric,
        alarmDescription: description,
        threshold: options.threshold,
        comparisonOperator: options.comparison,
        evaluationPeriods: options.periods,
        datapointsToAlarm: options.periods,
        treatMissingData: options.missing,
      })
      created.addAlarmAction(notify)
      created.addOkAction(notify)
      this.alarms.push(created)
      return created
    }
    const { GREATER_THAN_OR_EQUAL_TO_THRESHOLD: atLeast, LESS_THAN_THRESHOLD: below } =
      cloudwatch.ComparisonOperator
    const {
      NOT_BREACHING: notBreaching,
      MISSING: missing,
      BREACHING: breaching,
    } = cloudwatch.TreatMissingData
    const minute = Duration.minutes(1)
    const fiveMinutes = Duration.minutes(5)

    // The sync servers' own series, published by the collector sidecars.
    const server = (name: SyncServerMetricName, statistic: string, period = minute) =>
      new cloudwatch.Metric({
        namespace: props.namespace,
        metricName: name,
        dimensionsMap: { [CLUSTER_DIMENSION]: props.cluster.clusterName, [SERVICE_DIMENSION]: 'sync' },
        statistic,
        period,
      })
    alarm(
      'SnapshotFailures',
      'A sync server failed to write a room snapshot to S3 (it retries; the journal holds the updates).',
      server('symphony_snapshot_failures_total', 'Sum', fiveMinutes),
      { threshold: THRESHOLDS.snapshotFailures, comparison: atLeast, periods: 1, missing: notBreaching },
    )
    alarm(
      'JournalBacklog',
      'Updates journaled but not yet in a snapshot keep growing: snapshots are not keeping up.',
      server('symphony_journal_backlog_updates', 'Maximum', fiveMinutes),
      { threshold: THRESHOLDS.journalBacklogUpdates, comparison: atLeast, periods: 3, missing: missing },
    )
    alarm(
      'EventLoopLag',
      'A sync server’s event-loop lag p99 stays high: it is CPU-bound and every socket on it waits.',
      server('nodejs_eventloop_lag_p99_seconds', 'Maximum'),
      { threshold: THRESHOLDS.eventLoopLagP99Seconds, comparison: atLeast, periods: 5, missing: missing },
    )
    alarm(
      'UpdateHandling',
      'Applying and forwarding updates takes too long at p99 on some sync server.',
      server('symphony_update_handling_p99_seconds', 'Maximum'),
      { threshold: THRESHOLDS.updateHandlingP99Seconds, comparison: atLeast, periods: 5, missing: missing },
    )

    // Each dependency as the servers see it: 0 on any one server (Minimum) means its latest operation
    // on that dependency failed. A registry outage lets no room change owner; a journal, snapshot or
    // metadata outage loses durability or the dashboard's history.
    // Missing data stays "insufficient data": a silent collector is MetricsMissing's page, not five.
    const dependencyName = (dependency: string) => dependency[0]?.toUpperCase() + dependency.slice(1)
    for (const dependency of SYNC_DEPENDENCIES) {
      alarm(
        `DependencyDown${dependencyName(dependency)}`,
        `A sync server reports its dependency ${dependency} down (symphony_dependency_up 0) for ${THRESHOLDS.dependencyDownMinutes} minutes.`,
        new cloudwatch.Metric({
          namespace: props.namespace,
          metricName: 'symphony_dependency_up' satisfies SyncServerMetricName,
          dimensionsMap: {
            [CLUSTER_DIMENSION]: props.cluster.clusterName,
            [SERVICE_DIMENSION]: 'sync',
            [DEPENDENCY_DIMENSION]: dependency,
          },
          statistic: 'Minimum',
          period: minute,
        }),
        { threshold: 1, comparison: below, periods: THRESHOLDS.dependencyDownMinutes, missing: missing },
      )
    }

    // The heartbeat: every sync task's collector publishes symphony_connections each scrape (0 or
    // not). No sample for ten minutes means no collector is publishing, and every alarm above on
    // the servers' series has gone quiet: that pages itself.
    alarm(
      'MetricsMissing',
      'No sync server metrics reach CloudWatch for 10 minutes: the collectors are down, and the server alarms are blind.',
      server('symphony_connections', 'SampleCount', fiveMinutes),
      { threshold: 1, comparison: below, periods: 2, missing: breaching },
    )

    // The load balancer.
    const balancer = entry.loadBalancer.metrics
    alarm(
      'Target5xx',
      'The sync servers or the dashboard answer requests with 5xx.',
      balancer.httpCodeTarget(elbv2.HttpCodeTarget.TARGET_5XX_COUNT, {
        statistic: 'Sum',
        period: fiveMinutes,
      }),
      { threshold: THRESHOLDS.http5xxPerFiveMinutes, comparison: atLeast, periods: 1, missing: notBreaching },
    )
    alarm(
      'LoadBalancer5xx',
      'The load balancer itself answers 5xx (no healthy target, or targets refusing connections).',
      balancer.httpCodeElb(elbv2.HttpCodeElb.ELB_5XX_COUNT, { statistic: 'Sum', period: fiveMinutes }),
      { threshold: THRESHOLDS.http5xxPerFiveMinutes, comparison: atLeast, periods: 1, missing: notBreaching },
    )
    for (const [name, targetGroup] of [
      ['SyncUnhealthyTargets', sync.targetGroup],
      ['DashboardUnhealthyTargets', props.dashboard.targetGroup],
    ] as const) {
      alarm(
        name,
        `A ${name.startsWith('Sync') ? 'sync' : 'dashboard'} task fails the load balancer's health check.`,
        targetGroup.metrics.unhealthyHostCount({ statistic: 'Maximum', period: minute }),
        { threshold: THRESHOLDS.unhealthyTargets, comparison: atLeast, periods: 3, missing: notBreaching },
      )
    }

    // The sync service at its autoscaling ceiling: more users would get slower servers, not more.
    // A fixed fleet (minTasks = maxTasks) always runs at it, so there the alarm would never clear.
    if (sync.minTasks < sync.maxTasks)
      alarm(
        'SyncAtMaxTasks',
        `The sync service has run at its autoscaling maximum (${sync.maxTasks} tasks) for 15 minutes.`,
        new cloudwatch.Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: { ClusterName: props.cluster.clusterName, ServiceName: sync.service.serviceName },
          statistic: 'Minimum',
          period: fiveMinutes,
        }),
        { threshold: sync.maxTasks, comparison: atLeast, periods: 3, missing: notBreaching },
      )

    // Redis: the worst node (the primary does the work; replicas follow).
    const redis =
      cache &&
      ((metricName: string) => {
        const perNode = cache.nodeClusterIds.map(
          (clusterId) =>
            new cloudwatch.Metric({
              namespace: 'AWS/ElastiCache',
              metricName,
              dimensionsMap: { CacheClusterId: clusterId, CacheNodeId: '0001' },
              statistic: 'Maximum',
              period: fiveMinutes,
            }),
        )
        if (perNode.length === 1) return perNode[0] as cloudwatch.Metric
        return new cloudwatch.MathExpression({
          expression: `MAX([${perNode.map((_, i) => `${metricName.toLowerCase()}${i}`).join(', ')}])`,
          usingMetrics: Object.fromEntries(perNode.map((m, i) => [`${metricName.toLowerCase()}${i}`, m])),
          label: metricName,
          period: fiveMinutes,
        })
      })
    if (redis) {
      alarm(
        'RedisEngineCpu',
        'Redis’s engine thread is busy: journal appends and reads slow down.',
        redis('EngineCPUUtilization'),
        {
          threshold: THRESHOLDS.redisEngineCpuPercent,
          comparison: atLeast,
          periods: 3,
          missing: missing,
        },
      )
      alarm(
        'RedisMemory',
        'Redis is close to its memory limit (journal streams).',
        redis('DatabaseMemoryUsagePercentage'),
        {
          threshold: THRESHOLDS.redisMemoryPercent,
          comparison: atLeast,
          periods: 3,
          missing: missing,
        },
      )
    }

    // The registry table.
    for (const kind of ['Read', 'Write'] as const) {
      alarm(
        `Registry${kind}Throttles`,
        `DynamoDB throttles ${kind.toLowerCase()}s on the room registry.`,
        new cloudwatch.Metric({
          namespace: 'AWS/DynamoDB',
          metricName: `${kind}ThrottleEvents`,
          dimensionsMap: { TableName: storage.registryTable.tableName },
          statistic: 'Sum',
          period: fiveMinutes,
        }),
        { threshold: THRESHOLDS.dynamoDbThrottles, comparison: atLeast, periods: 1, missing: notBreaching },
      )
    }

    // Postgres.
    alarm(
      'DatabaseCpu',
      'The metadata database is busy for 15 minutes.',
      database.instance.metricCPUUtilization({ statistic: 'Average', period: fiveMinutes }),
      { threshold: THRESHOLDS.rdsCpuPercent, comparison: atLeast, periods: 3, missing: missing },
    )
    alarm(
      'DatabaseFreeStorage',
      'The metadata database is nearly out of storage: autoscaling has not added enough in time, or is at its ceiling.',
      database.instance.metricFreeStorageSpace({ statistic: 'Minimum', period: fiveMinutes }),
      {
        threshold: databaseFreeStorageFloorBytes(database.storageGiB),
        comparison: below,
        periods: 1,
        missing: missing,
      },
    )

    this.dashboard = operationsDashboard(this, 'Dashboard', {
      ...props,
      server,
      alarms: this.alarms,
      redis,
    })
  }
}
