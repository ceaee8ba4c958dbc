import { escapeHtml } from './escape-html.js'

export interface Series {
  name: string
  color: string
  points: [number, number | null][]
}

export const CHART_WIDTH = 720
const HEIGHT = 240
const PAD = { left: 56, right: 16, top: 26, bottom: 44 }

/** An SVG line chart over the run's seconds: y gridlines with values, x ticks every "nice" step. */
export function lineChart(title: string, unit: string, series: Series[]): string {
  const xs = series.flatMap((s) => s.points.map(([x]) => x))
  const ys = series.flatMap((s) => s.points.flatMap(([, y]) => (y === null ? [] : [y])))
  const xMax = Math.max(1, ...xs)
  const yMax = niceCeiling(Math.max(0, ...ys))
  const bottom = HEIGHT - PAD.bottom
  const x = (value: number) => PAD.left + (value / xMax) * (CHART_WIDTH - PAD.left - PAD.right)
  const y = (value: number) => bottom - (value / yMax) * (HEIGHT - PAD.top - PAD.bottom)
  const yGrid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const value = yMax * f
    return `<line x1="${PAD.left}" x2="${CHART_WIDTH - PAD.right}" y1="${y(value)}" y2="${y(value)}" stroke="#e5e5e5"/><text x="${PAD.left - 6}" y="${y(value) + 4}" text-anchor="end" font-size="11">${format(value)}</text>`
  })
  const xTicks = timeTicks(xMax).map(
    (second) =>
      `<g class="x-tick"><line x1="${x(second)}" x2="${x(second)}" y1="${bottom}" y2="${bottom + 5}" stroke="#666"/><text x="${x(second)}" y="${bottom + 17}" text-anchor="middle" font-size="11">${second}</text></g>`,
  )
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
<svg width="${CHART_WIDTH}" height="${HEIGHT}" viewBox="0 0 ${CHART_WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">
${yGrid.join('')}
<line x1="${PAD.left}" x2="${CHART_WIDTH - PAD.right}" y1="${bottom}" y2="${bottom}" stroke="#666"/>
${xTicks.join('')}
<text x="${(PAD.left + CHART_WIDTH - PAD.right) / 2}" y="${HEIGHT - 6}" text-anchor="middle" font-size="11">seconds since the start</text>
<text x="4" y="12" font-size="11">${escapeHtml(unit)}</text>
${lines.join('')}
</svg>`
}

/** Whole seconds from 0 to `max` every 1, 2, 5, 10, 15, 30, 60, … s: at most about 10 of them. */
export function timeTicks(max: number): number[] {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600]
  const step = steps.find((candidate) => max / candidate <= 10) ?? 3600 * Math.ceil(max / 10 / 3600)
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step)
}

function niceCeiling(value: number): number {
  if (value <= 0) return 1
  const magnitude = 10 ** Math.floor(Math.log10(value))
  return [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((candidate) => candidate >= value) ?? value
}

const format = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(value >= 10 ? 1 : 2))
