import type { Report } from './report-schema.js'
import { formatTable } from './table.js'

interface Series {
  name: string
  color: string
  points: [number, number | null][]
}

const WIDTH = 720
const HEIGHT = 220
const PAD = { left: 56, right: 16, top: 16, bottom: 28 }

/** A self-contained page (no scripts, no network): the summary table and the charts over time. */
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
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:${WIDTH + 40}px}
pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:12px}
svg{display:block;margin:8px 0 24px}
.legend span{margin-right:14px;font-size:12px}
</style></head><body>
<h1>Symphony load test</h1>
<p>${escapeHtml(report.workload.source)}. Target ${escapeHtml(report.target.url)}, started ${escapeHtml(report.startedAt)}.</p>
<pre>${escapeHtml(formatTable(report))}</pre>
${latency}${connect}${cpu}${rss}
<p>Every figure is in the JSON report (<code>--json</code>).</p>
</body></html>
`
}

function lineChart(title: string, unit: string, series: Series[]): string {
  const xs = series.flatMap((s) => s.points.map(([x]) => x))
  const ys = series.flatMap((s) => s.points.flatMap(([, y]) => (y === null ? [] : [y])))
  const xMax = Math.max(1, ...xs)
  const yMax = niceCeiling(Math.max(0, ...ys))
  const x = (value: number) => PAD.left + (value / xMax) * (WIDTH - PAD.left - PAD.right)
  const y = (value: number) => HEIGHT - PAD.bottom - (value / yMax) * (HEIGHT - PAD.top - PAD.bottom)
  const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const value = yMax * f
    return `<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(value)}" y2="${y(value)}" stroke="#e5e5e5"/><text x="${PAD.left - 6}" y="${y(value) + 4}" text-anchor="end" font-size="11">${format(value)}</text>`
  })
  const lines = series.map((s) => {
    const path = s.points
      .map(([px, py], i) => {
        if (py === null) return ''
        const move = i === 0 || s.points[i - 1]?.[1] === null ? 'M' : 'L'
        return `${move}${x(px).toFixed(1)},${y(py).toFixed(1)}`
      })
      .join('')
    return path ? `<path d="${path}" fill="none" stroke="${s.color}" stroke-width="1.5"/>` : ''
  })
  const legend = series
    .map((s) => `<span style="color:${s.color}">&#9632; ${escapeHtml(s.name)}</span>`)
    .join('')
  return `<h2>${escapeHtml(title)}</h2><div class="legend">${legend}</div>
<svg width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">
${grid.join('')}
<text x="${WIDTH - PAD.right}" y="${HEIGHT - 6}" text-anchor="end" font-size="11">seconds (max ${xMax})</text>
<text x="4" y="12" font-size="11">${escapeHtml(unit)}</text>
${lines.join('')}
</svg>`
}

function niceCeiling(value: number): number {
  if (value <= 0) return 1
  const magnitude = 10 ** Math.floor(Math.log10(value))
  return [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((candidate) => candidate >= value) ?? value
}

const format = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(value >= 10 ? 1 : 2))

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
