/**
 * The Prometheus series the collector sidecars publish to CloudWatch, in one place: the collector's
 * configuration, the alarms and the dashboard all read these names, and a test can check them
 * against the server's own list (`server/src/metric-names.ts`).
 */

/** How CloudWatch should aggregate a series across tasks, and what its EMF value is. */
export interface PublishedMetric {
  /** The Prometheus name, which is also the CloudWatch metric name. */
  name: string
  /**
   * `counter`: cumulative in Prometheus; the awsemf exporter publishes the delta since the previous
   * scrape, so a period's Sum is what happened in it. `gauge`: published as scraped.
   */
  kind: 'counter' | 'gauge'
  /** A label kept as an extra dimension (e.g. `dependency`); others are summed over. */
  label?: string
}

/** The extra dimension `symphony_dependency_up` is published with. */
export const DEPENDENCY_DIMENSION = 'dependency'

/** The sync server's series (port 1234, `/metrics`) that CloudWatch gets. */
export const SYNC_SERVER_METRICS = [
  { name: 'symphony_snapshot_failures_total', kind: 'counter' },
  { name: 'symphony_journal_backlog_updates', kind: 'gauge' },
  { name: 'nodejs_eventloop_lag_p99_seconds', kind: 'gauge' },
  { name: 'symphony_update_handling_p99_seconds', kind: 'gauge' },
  { name: 'symphony_connections', kind: 'gauge' },
  { name: 'symphony_rooms', kind: 'gauge' },
  { name: 'symphony_messages_received_total', kind: 'counter' },
  { name: 'symphony_bytes_received_total', kind: 'counter' },
  { name: 'symphony_messages_sent_total', kind: 'counter' },
  { name: 'symphony_bytes_sent_total', kind: 'counter' },
  { name: 'symphony_registry_errors_total', kind: 'counter' },
  { name: 'symphony_dependency_up', kind: 'gauge', label: DEPENDENCY_DIMENSION },
] as const satisfies readonly PublishedMetric[]

/**
 * The `dependency` label values of `symphony_dependency_up` (the server's `Dependency` type): each
 * is its own CloudWatch metric, and each gets an alarm.
 */
export const SYNC_DEPENDENCIES = ['registry', 'snapshots', 'journal', 'metadata'] as const

export type SyncServerMetricName = (typeof SYNC_SERVER_METRICS)[number]['name']

/** The names alone, for the cross-check against the server's list. */
export const SYNC_SERVER_METRIC_NAMES: readonly SyncServerMetricName[] = SYNC_SERVER_METRICS.map(
  (m) => m.name,
)

/**
 * The dashboard server's series (port 3000, `/metrics`) that CloudWatch gets: a few named ones, not
 * every `symphony_dashboard_*` series (Node's process metrics alone would be dozens of paid metrics).
 */
export const DASHBOARD_METRICS = [
  { name: 'symphony_dashboard_http_requests_total', kind: 'counter' },
  { name: 'symphony_dashboard_db_query_errors_total', kind: 'counter' },
  { name: 'symphony_dashboard_sse_clients', kind: 'gauge' },
  { name: 'symphony_dashboard_process_cpu_seconds_total', kind: 'counter' },
  { name: 'symphony_dashboard_process_resident_memory_bytes', kind: 'gauge' },
] as const satisfies readonly PublishedMetric[]

/**
 * The dimensions every published series carries, set by the collector from the task it runs in:
 * the stack's ECS cluster and which service (`sync` or `dashboard`) scraped it. Every task of a
 * service publishes under the same values, so a statistic over them spans the whole service.
 */
export const CLUSTER_DIMENSION = 'ClusterName'
export const SERVICE_DIMENSION = 'Service'

/** The CloudWatch namespace of one stack's Symphony series. */
export function metricsNamespace(stackName: string): string {
  return `Symphony/${stackName}`
}
