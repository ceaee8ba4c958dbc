import { Stack } from 'aws-cdk-lib'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { containerLogs } from '../fargate.js'
import { CLUSTER_DIMENSION, type PublishedMetric, SERVICE_DIMENSION } from './metrics.js'

/**
 * The AWS Distro for OpenTelemetry collector, pinned: a multi-arch image (x86-64 and arm64), so it
 * runs beside either task architecture.
 */
export const COLLECTOR_IMAGE = 'public.ecr.aws/aws-observability/aws-otel-collector:v0.47.0'

/** How often the sidecar scrapes `/metrics`: CloudWatch's standard resolution is one minute. */
export const SCRAPE_INTERVAL_SECONDS = 30

/**
 * The sidecar's share of its task. Fargate sizes the task, not the containers: these reserve a
 * slice of it (CPU units are a weight under contention, not a cap) and cap the collector's memory,
 * so a leak in it is killed before it can starve the server.
 */
export const COLLECTOR_CPU_UNITS = 64
export const COLLECTOR_MEMORY_MIB = 128

export interface CollectorConfigOptions {
  /** The port of the container's `/metrics` (the task's containers share localhost). */
  port: number
  /** The `Service` dimension: `sync` or `dashboard`. */
  service: string
  clusterName: string
  namespace: string
  /** Where the EMF records go; CloudWatch extracts the metrics from them. */
  logGroupName: string
  /** The series to publish, by exact name. */
  metrics: readonly PublishedMetric[]
}

/**
 * The collector's configuration (what `AOT_CONFIG_CONTENT` holds): the `prometheus` receiver scrapes
 * the task's own `/metrics` and keeps only the published series, labelled with the cluster and the
 * service; the `awsemf` exporter writes them as CloudWatch metrics in the stack's namespace, with
 * exactly the dimensions below (no roll-ups) and counters turned into per-scrape deltas.
 *
 * Returned as an object: its JSON is valid YAML, which the collector reads. No `$` anywhere, since
 * the collector would take it for an environment variable: Prometheus anchors its regexes itself,
 * and the names kept by the receiver make the exporter's selectors exact without `$`.
 */
export function collectorConfig(options: CollectorConfigOptions) {
  const { metrics } = options
  const keep = metrics.map((m) => m.name).join('|')
  const baseDimensions = [CLUSTER_DIMENSION, SERVICE_DIMENSION]
  const plain = metrics.filter((m) => !m.label)
  const labelled = metrics.filter((m) => m.label)
  const declarations = [
    { dimensions: [baseDimensions], metric_name_selectors: plain.map((m) => `^${m.name}`) },
    ...labelled.map((m) => ({
      dimensions: [[...baseDimensions, m.label as string]],
      metric_name_selectors: [`^${m.name}`],
    })),
  ]
  return {
    receivers: {
      prometheus: {
        config: {
          global: { scrape_interval: `${SCRAPE_INTERVAL_SECONDS}s`, scrape_timeout: '10s' },
          scrape_configs: [
            {
              job_name: `symphony-${options.service}`,
              metrics_path: '/metrics',
              static_configs: [
                {
                  targets: [`localhost:${options.port}`],
                  labels: {
                    [CLUSTER_DIMENSION]: options.clusterName,
                    [SERVICE_DIMENSION]: options.service,
                  },
                },
              ],
              metric_relabel_configs: [{ source_labels: ['__name__'], regex: keep, action: 'keep' }],
            },
          ],
        },
      },
    },
    processors: {
      // The task's ids for the log stream's name ({TaskId}); no IAM needed (task metadata endpoint).
      resourcedetection: { detectors: ['ecs'], timeout: '5s', override: false },
      batch: { timeout: '30s' },
    },
    exporters: {
      awsemf: {
        namespace: options.namespace,
        log_group_name: options.logGroupName,
        log_stream_name: `${options.service}/{TaskId}`,
        dimension_rollup_option: 'NoDimensionRollup',
        metric_declarations: declarations,
      },
    },
    service: {
      pipelines: {
        metrics: {
          receivers: ['prometheus'],
          processors: ['resourcedetection', 'batch'],
          exporters: ['awsemf'],
        },
      },
    },
  }
}

export interface MetricsCollectorProps extends Omit<CollectorConfigOptions, 'logGroupName' | 'clusterName'> {
  task: ecs.FargateTaskDefinition
  cluster: ecs.ICluster
}

/**
 * The collector sidecar in one task: scrapes the task's `/metrics` and publishes the series to
 * CloudWatch as embedded metric format (EMF) records in its own log group. Not essential: if it
 * crashes, the service keeps serving and only its metrics pause.
 *
 * Permissions: EMF goes through CloudWatch Logs, so the task role gets writing to this one log
 * group, nothing else. No `cloudwatch:PutMetricData`, which cannot be scoped to a resource.
 */
export class MetricsCollector extends Construct {
  public readonly container: ecs.ContainerDefinition
  public readonly logGroup: logs.LogGroup

  constructor(scope: Construct, id: string, props: MetricsCollectorProps) {
    super(scope, id)
    // Metrics are extracted on arrival; the records themselves are only worth keeping briefly.
    this.logGroup = new logs.LogGroup(this, 'Emf', { retention: logs.RetentionDays.ONE_WEEK })
    const config = collectorConfig({
      ...props,
      clusterName: props.cluster.clusterName,
      logGroupName: this.logGroup.logGroupName,
    })
    this.container = props.task.addContainer('metrics-collector', {
      image: ecs.ContainerImage.fromRegistry(COLLECTOR_IMAGE),
      essential: false,
      cpu: COLLECTOR_CPU_UNITS,
      memoryLimitMiB: COLLECTOR_MEMORY_MIB,
      environment: {
        AOT_CONFIG_CONTENT: Stack.of(this).toJsonString(config),
        AWS_REGION: Stack.of(this).region,
      },
      readonlyRootFilesystem: true,
      logging: containerLogs(this, `${props.service}-collector`, logs.RetentionDays.ONE_WEEK),
    })
    props.task.taskRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents', 'logs:DescribeLogStreams'],
        resources: [this.logGroup.logGroupArn],
      }),
    )
  }
}
