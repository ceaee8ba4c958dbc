import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DashboardMetrics } from '../../dashboard-server/src/metrics.js'
import { startSymphony } from '../../loadtest/src/bench/servers.js'
import { ALARM_METRICS } from '../../server/src/metric-names.js'
import { DASHBOARD_METRICS, SYNC_SERVER_METRICS } from '../lib/observability/metrics.js'

describe('the series infra publishes and alarms on, against the sync server', () => {
  it('a real sync server exports every one of them, each of the kind the collector expects', async () => {
    const server = await startSymphony({ env: { DATABASE_URL: 'none' } })
    try {
      const text = await (await fetch(`${server.url.replace(/^ws/, 'http')}/metrics`)).text()
      const kinds = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]))
      for (const metric of SYNC_SERVER_METRICS) {
        assert.equal(kinds.get(metric.name), metric.kind, `${metric.name} is a ${metric.kind}`)
      }
    } finally {
      await server.stop()
    }
  })

  it('every series the server lists for operators is published, or left out on purpose', () => {
    // Left in Prometheus only: CloudWatch cannot take percentiles of a histogram (the p99 gauge
    // stands for it), build info is labels only, and per-type counts would be nine more paid metrics.
    const leftOut = new Set<string>([
      ALARM_METRICS.updateHandlingSeconds,
      ALARM_METRICS.buildInfo,
      ALARM_METRICS.messagesReceivedByType,
    ])
    const published = new Set<string>(SYNC_SERVER_METRICS.map((m) => m.name))
    for (const name of Object.values(ALARM_METRICS)) {
      assert.ok(published.has(name) !== leftOut.has(name), `${name}: published, or left out on purpose`)
    }
  })

  it('the dashboard exports every series its collector publishes, each of the kind expected', async () => {
    const text = await new DashboardMetrics({ version: 'test', sseClients: () => 0 }).registry.metrics()
    const kinds = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]))
    for (const metric of DASHBOARD_METRICS) {
      assert.equal(kinds.get(metric.name), metric.kind, `${metric.name} is a ${metric.kind}`)
    }
  })
})
