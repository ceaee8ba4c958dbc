import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * The dashboard's own Prometheus metrics (`GET /metrics`), on a registry of its own so several
 * dashboards can live in one process (tests) without sharing counters.
 */
export class DashboardMetrics {
  readonly registry = new Registry()
  readonly httpRequests = new Counter({
    name: 'symphony_dashboard_http_requests_total',
    help: 'HTTP requests answered, by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
  })
  readonly httpDuration = new Histogram({
    name: 'symphony_dashboard_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (the live event stream counts until it closes), by route',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })
  readonly dbQueryErrors = new Counter({
    name: 'symphony_dashboard_db_query_errors_total',
    help: 'Metadata database queries that failed',
    registers: [this.registry],
  })
  readonly dbQueryDuration = new Histogram({
    name: 'symphony_dashboard_db_query_duration_seconds',
    help: 'Time of one metadata database query',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  })

  constructor(options: { version: string; sseClients: () => number }) {
    new Gauge({
      name: 'symphony_dashboard_sse_clients',
      help: 'Browsers (and scripts) connected to the live event stream /api/events',
      registers: [this.registry],
      collect() {
        this.set(options.sseClients())
      },
    })
    new Gauge({
      name: 'symphony_dashboard_build_info',
      help: 'Always 1; the labels say which build runs',
      labelNames: ['version', 'node'],
      registers: [this.registry],
    }).set({ version: options.version, node: process.version }, 1)
    collectDefaultMetrics({ register: this.registry, prefix: 'symphony_dashboard_' })
  }

  /** Reports one query's time and outcome (MetadataQueries calls it). */
  observeQuery(seconds: number, failed: boolean): void {
    this.dbQueryDuration.observe(seconds)
    if (failed) this.dbQueryErrors.inc()
  }
}
