import { escapeHtml } from './escape-html.js'
import { CHART_WIDTH, lineChart } from './line-chart.js'
import type { Report } from './report-schema.js'
import { formatTable } from './table.js'
import { measured, THRESHOLDS_CROSSED_EXIT_CODE } from './thresholds.js'

/**
 * A self-contained page (no scripts, no network): the thresholds that set the exit code with their
 * verdicts, the whole summary table (wrapped, never clipped) and the charts over time.
 */
export function htmlReport(report: Report): string {
  const t = report.timeline
  const at = <T>(pick: (s: Report['timeline'][number]) => T) =>
    t.map((s) => [s.second, pick(s)] as [number, T])
  type Metric = keyof Report['timeline'][number]['latency']
  const percentile = (metric: Metric, which: 'p50' | 'p99') =>
    at((s) => (s.latency[metric].count ? s.latency[metric][which] : null))
  const latency = lineChart('Broadcast latency over time', 'ms', [
    { name: 'update p50', color: '#6baed6', points: percentile('update', 'p50') },
    { name: 'update p99', color: '#08519c', points: percentile('update', 'p99') },
    { name: 'presence p50', color: '#fd8d3c', points: percentile('presence', 'p50') },
    { name: 'presence p99', color: '#a63603', points: percentile('presence', 'p99') },
  ])
  const connect = lineChart('Connect + sync latency and users', 'ms / users', [
    {
      name: 'connect p99 (ms)',
      color: '#756bb1',
      points: at((s) => (s.latency.connect.count ? s.latency.connect.p99 : null)),
    },
    { name: 'users', color: '#31a354', points: at((s) => s.users) },
  ])
  const cpu = lineChart('CPU', '% of one core', [
    { name: 'server', color: '#de2d26', points: at((s) => s.serverCpuPercent) },
    { name: 'generator (busiest agent)', color: '#969696', points: at((s) => s.generatorCpuPercent) },
  ])
  const rss = lineChart('Server resident memory', 'MiB', [
    {
      name: 'server RSS',
      color: '#3182bd',
      points: at((s) => (s.serverRssBytes === null ? null : s.serverRssBytes / 2 ** 20)),
    },
  ])
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Symphony load test: ${escapeHtml(report.workload.name)} ${escapeHtml(report.startedAt)}</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:${CHART_WIDTH + 40}px}
pre{background:#f6f6f6;padding:12px;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
table.thresholds{border-collapse:collapse;font-size:13px}
.thresholds td,.thresholds th{border:1px solid #ddd;padding:4px 10px;text-align:left}
.pass{color:#1a7f37}.fail{color:#c62828;font-weight:bold}
svg{display:block;margin:8px 0 24px}
.legend span{margin-right:14px;font-size:12px}
</style></head><body>
<h1>Symphony load test</h1>
<p>${escapeHtml(report.workload.source)}. Target ${escapeHtml(report.target.url)}, started ${escapeHtml(report.startedAt)}.</p>
${thresholdSection(report)}
<h2>Summary</h2>
<pre class="summary">${escapeHtml(formatTable(report))}</pre>
${latency}${connect}${cpu}${rss}
<p>Every figure is in the JSON report (<code>--json</code>).</p>
</body></html>
`
}

/** Each threshold with what was measured and its verdict, and the exit code they make. */
function thresholdSection({ thresholds }: Report): string {
  if (thresholds.length === 0) {
    return '<h2>Thresholds</h2>\n<p>None given (<code>--threshold</code>): the run exits 0 whatever it measured.</p>'
  }
  const crossed = thresholds.filter((t) => !t.ok).length
  const outcome =
    crossed === 0
      ? `<p class="pass">All ${thresholds.length} thresholds hold: exit code 0.</p>`
      : `<p class="fail">${crossed} of ${thresholds.length} thresholds crossed: exit code ${THRESHOLDS_CROSSED_EXIT_CODE}.</p>`
  const rows = thresholds.map(
    (t) =>
      `<tr><td><code>${escapeHtml(t.expression)}</code></td><td>${measured(t)}</td><td class="${t.ok ? 'pass' : 'fail'}">${t.ok ? '&#10003; pass' : '&#10007; fail'}</td></tr>`,
  )
  return `<h2>Thresholds</h2>
${outcome}
<table class="thresholds"><tr><th>threshold</th><th>measured</th><th>verdict</th></tr>
${rows.join('\n')}
</table>`
}
