/**
 * The metrics alarms are defined on (infra imports this list): each is exported by every sync
 * server's `/metrics`. A plain module without dependencies, so anything may import it.
 */
export const ALARM_METRICS = {
  /** Histogram: from a document update's arrival (a client's, here or relayed) to its last local socket write. */
  updateHandlingSeconds: 'symphony_update_handling_seconds',
  /** Gauge: the p99 of that over the updates of the last 60 s (0 when there were none). */
  updateHandlingP99Seconds: 'symphony_update_handling_p99_seconds',
  /** Counter `{type}`: client frames by wire message type. */
  messagesReceivedByType: 'symphony_messages_received_by_type_total',
  /** Counter `{action}`: failed room registry operations. */
  registryErrors: 'symphony_registry_errors_total',
  /** Gauge: journaled updates that no saved snapshot holds yet, over this server's rooms. */
  journalBacklogUpdates: 'symphony_journal_backlog_updates',
  /** Gauge `{version,node,commit}`, always 1. */
  buildInfo: 'symphony_build_info',
  /** Gauge `{dependency}`: 1 while its latest operation succeeded, else 0. */
  dependencyUp: 'symphony_dependency_up',
  /** Gauge: event-loop lag p99 (prom-client's default metrics). */
  eventLoopLagP99Seconds: 'nodejs_eventloop_lag_p99_seconds',
} as const

export type AlarmMetricName = (typeof ALARM_METRICS)[keyof typeof ALARM_METRICS]

/** Every `action` label of `symphony_registry_errors_total`; each is exported from start, at 0. */
export const REGISTRY_ERROR_ACTIONS = ['claim', 'release', 'lookup', 'refresh', 'probe'] as const
