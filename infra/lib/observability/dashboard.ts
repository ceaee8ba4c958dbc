import { Duration } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import type * as ecs from 'aws-cdk-lib/aws-ecs'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import type { Construct } from 'constructs'
import type { DashboardService } from '../dashboard-service.js'
import type { Database } from '../database.js'
import type { PublicEntry } from '../public-entry.js'
import type { Storage } from '../storage.js'
import type { SyncService } from '../sync-service.js'
import { SCRAPE_INTERVAL_SECONDS } from './collector.js'
import type { SyncServerMetricName } from './metrics.js'

export interface OperationsDashboardProps {
  cluster: ecs.ICluster
  entry: PublicEntry
  sync: SyncService
  dashboard: DashboardService
  database: Database
  storage: Storage
  alarms: cloudwatch.IAlarm[]
  /** A sync-server series in the stack's namespace. */
  server: (name: SyncServerMetricName, statistic: string, period?: Duration) => cloudwatch.Metric
  /** A Redis metric, worst node; unset when there is no ElastiCache (the journal on MemoryDB). */
  redis: ((metricName: string) => cloudwatch.IMetric) | undefined
}

const minute = Duration.minutes(1)

/**
 * The stack's CloudWatch dashboard: alarm states first, then the servers' load, their latency, the
 * load balancer, and the managed parts, so one page shows where trouble starts.
 */
export function operationsDashboard(
  scope: Construct,
  id: string,
  props: OperationsDashboardProps,
): cloudwatch.Dashboard {
  const { server, sync, entry } = props
  // Every task publishes its gauge once per scrape into the same series: the period's Sum divided by
  // the scrapes in it is the fleet's total.
  const fleetTotal = (name: SyncServerMetricName, label: string) =>
    new cloudwatch.MathExpression({
      expression: `${name} / (PERIOD(${name}) / ${SCRAPE_INTERVAL_SECONDS})`,
      usingMetrics: { [name]: server(name, 'Sum') },
      label,
      period: minute,
    })
  // Counters arrive as per-scrape deltas: the period's Sum over its seconds is a rate.
  const perSecond = (name: SyncServerMetricName, label: string) =>
    new cloudwatch.MathExpression({
      expression: `${name} / PERIOD(${name})`,
      usingMetrics: { [name]: server(name, 'Sum') },
      label,
      period: minute,
    })
  const graph = (title: string, left: cloudwatch.IMetric[], right?: cloudwatch.IMetric[]) =>
    new cloudwatch.GraphWidget({ title, left, right, width: 12, height: 6 })

  const dashboard = new cloudwatch.Dashboard(scope, id, {
    defaultInterval: Duration.hours(3),
  })
  dashboard.addWidgets(
    new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: props.alarms, width: 24, height: 4 }),
  )
  dashboard.addWidgets(
    graph(
      'Users and rooms (all sync servers)',
      [fleetTotal('symphony_connections', 'connections')],
      [fleetTotal('symphony_rooms', 'rooms')],
    ),
    graph(
      'Messages per second',
      [
        perSecond('symphony_messages_received_total', 'received'),
        perSecond('symphony_messages_sent_total', 'sent'),
      ],
      [
        perSecond('symphony_bytes_received_total', 'bytes received'),
        perSecond('symphony_bytes_sent_total', 'bytes sent'),
      ],
    ),
  )
  dashboard.addWidgets(
    graph('Latency p99, worst server (s)', [
      server('nodejs_eventloop_lag_p99_seconds', 'Maximum'),
      server('symphony_update_handling_p99_seconds', 'Maximum'),
    ]),
    graph(
      'Persistence',
      [server('symphony_journal_backlog_updates', 'Maximum')],
      [server('symphony_snapshot_failures_total', 'Sum'), server('symphony_registry_errors_total', 'Sum')],
    ),
  )
  dashboard.addWidgets(
    graph(
      'Sync tasks',
      [
        new cloudwatch.Metric({
          namespace: 'ECS/ContainerInsights',
          metricName: 'RunningTaskCount',
          dimensionsMap: {
            ClusterName: props.cluster.clusterName,
            ServiceName: sync.service.serviceName,
          },
          statistic: 'Average',
          period: minute,
        }),
      ],
      [
        sync.service.metricCpuUtilization({ period: minute }),
        sync.service.metricMemoryUtilization({ period: minute }),
      ],
    ),
    graph(
      'Load balancer',
      [
        entry.loadBalancer.metrics.httpCodeTarget(elbv2.HttpCodeTarget.TARGET_5XX_COUNT, { period: minute }),
        entry.loadBalancer.metrics.httpCodeElb(elbv2.HttpCodeElb.ELB_5XX_COUNT, { period: minute }),
        sync.targetGroup.metrics.unhealthyHostCount({ period: minute, statistic: 'Maximum' }),
        props.dashboard.targetGroup.metrics.unhealthyHostCount({ period: minute, statistic: 'Maximum' }),
      ],
      [entry.loadBalancer.metrics.activeConnectionCount({ period: minute })],
    ),
  )
  const throttles = (kind: 'Read' | 'Write') =>
    new cloudwatch.Metric({
      namespace: 'AWS/DynamoDB',
      metricName: `${kind}ThrottleEvents`,
      dimensionsMap: { TableName: props.storage.registryTable.tableName },
      statistic: 'Sum',
      period: minute,
    })
  dashboard.addWidgets(
    ...(props.redis
      ? [
          graph('Redis (worst node, %)', [
            props.redis('EngineCPUUtilization'),
            props.redis('DatabaseMemoryUsagePercentage'),
          ]),
        ]
      : []),
    graph(
      'Registry and metadata database',
      [
        throttles('Read'),
        throttles('Write'),
        props.database.instance.metricCPUUtilization({ period: minute }),
      ],
      [props.database.instance.metricFreeStorageSpace({ period: minute })],
    ),
  )
  return dashboard
}
