import { median } from '../median.js'
import type { Report } from '../report-schema.js'

/**
 * The figures compared, each read from a run's report; lower is better for all of them. All but
 * the last two are the steady state's (after the ramp), where per-message costs are measured.
 */
const FIGURES = {
  'server CPU per delivered message (us)': (r: Report) => r.steady.cpuMicrosecondsPerDeliveredMessage,
  'server RSS per user (KiB)': (r: Report) =>
    r.steady.rssBytesPerUser === null ? null : r.steady.rssBytesPerUser / 1024,
  'update broadcast p99 (ms)': (r: Report) => r.steady.latency.update.p99,
  'presence broadcast p99 (ms)': (r: Report) =>
    r.steady.latency.presence.count ? r.steady.latency.presence.p99 : null,
  'connect + sync p99 (ms), whole run': (r: Report) => r.latency.connect.p99,
  'server CPU per delivered message (us), whole run': (r: Report) =>
    r.server.cpuMicrosecondsPerDeliveredMessage,
} satisfies Record<string, (report: Report) => number | null>

export interface Comparison {
  rooms: number
  users: number
  figures: { figure: string; ours: number | null; reference: number | null; ratio: number | null }[]
  /** Runs with errors, drops or diverged rooms, which make a comparison suspect. */
  troubled: number
}

/** Everything in a run that went wrong: failed or dropped connections, errors, lost messages. */
export function troubles(report: Report): number {
  const { counts, drops } = report
  return counts.connectErrors + counts.errors + counts.unexpectedCloses + drops.updates + drops.presence
}

export function compare(rooms: number, ours: Report[], reference: Report[]): Comparison {
  const figures = Object.entries(FIGURES).map(([figure, read]) => {
    const a = median(ours.map(read))
    const b = median(reference.map(read))
    return { figure, ours: a, reference: b, ratio: a !== null && b !== null && b > 0 ? round(a / b) : null }
  })
  const troubled = [...ours, ...reference].filter(
    (r) => troubles(r) > 0 || r.convergence.converged < r.convergence.rooms,
  ).length
  return { rooms, users: ours[0]?.workload.users ?? 0, figures, troubled }
}

export function formatComparison(c: Comparison): string {
  const cell = (value: number | null) => (value === null ? '-' : String(round(value))).padStart(12)
  const lines = [
    `${c.rooms} rooms, ${c.users} users (medians)`,
    `${'figure'.padEnd(50)} ${'symphony'.padStart(12)} ${'y-websocket'.padStart(12)} ${'ours/ref'.padStart(12)}`,
    ...c.figures.map((f) => `${f.figure.padEnd(50)} ${cell(f.ours)} ${cell(f.reference)} ${cell(f.ratio)}`),
  ]
  if (c.troubled) lines.push(`warning: ${c.troubled} run(s) had errors, drops or diverged rooms`)
  return lines.join('\n')
}

const round = (value: number) => Math.round(value * 100) / 100
