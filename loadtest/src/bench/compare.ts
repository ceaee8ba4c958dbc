import { median } from '../measurement/median.js'
import type { Report } from '../reporting/report-schema.js'

/**
 * The figures compared, each read from a run's report; lower is better for all of them. All but
 * the connect figure are the steady state's (after the ramp), where per-message costs are measured.
 */
const FIGURES = {
  'server CPU (cores)': (r: Report) => {
    const mean = r.timeline.filter((t) => t.second >= r.steady.fromSecond && t.second < r.steady.toSecond)
    const cpu = mean.flatMap((t) => (t.serverCpuPercent === null ? [] : [t.serverCpuPercent]))
    return cpu.length ? cpu.reduce((a, b) => a + b, 0) / cpu.length / 100 : null
  },
  'CPU per delivered message (us)': (r: Report) => r.steady.cpuMicrosecondsPerDeliveredMessage,
  'RSS per user (KiB)': (r: Report) =>
    r.steady.rssBytesPerUser === null ? null : r.steady.rssBytesPerUser / 1024,
  'update p99 (ms)': (r: Report) => r.steady.latency.update.p99,
  'presence p99 (ms)': (r: Report) =>
    r.steady.latency.presence.count ? r.steady.latency.presence.p99 : null,
  'connect p99, ramp (ms)': (r: Report) => r.latency.connect.p99,
} satisfies Record<string, (report: Report) => number | null>
type Figure = keyof typeof FIGURES
export const FIGURE_NAMES = Object.keys(FIGURES) as Figure[]

/** One server's medians at one size, or why it did not run. */
export interface ContenderResult {
  name: string
  runs: number
  medians: Record<Figure, number | null>
  /** CPU of the processes a deployment runs elsewhere (embedded database, Redis), % of a core. */
  helperCpuPercent: number | null
  /** How far the helpers' RSS rose during a run (highest minus lowest reading), per user, KiB. */
  helperRssKiBPerUser: number | null
  /** Rooms held in memory, summed over the servers (`symphony_rooms`) halfway through the steady state. */
  roomsHeld: number | null
  /** Our servers' V8 heap in use in the steady state (median) above before the run, per user, KiB. */
  heapKiBPerUser: number | null
  /** Runs with errors, drops or diverged rooms, which make a comparison suspect. */
  troubled: number
  /** Set when the server could not be built or started. */
  unavailable?: string
}

export interface Comparison {
  rooms: number
  users: number
  contenders: ContenderResult[]
}

/** Everything in a run that went wrong: failed or dropped connections, errors, lost messages. */
export function troubles(report: Report): number {
  const { counts, drops } = report
  return counts.connectErrors + counts.errors + counts.unexpectedCloses + drops.updates + drops.presence
}

export function summarize(
  name: string,
  reports: Report[],
  helpers: { cpuPercent: number[]; rssKiBPerUser: number[] },
  roomsHeld: number[] = [],
  heapKiBPerUser: number[] = [],
): ContenderResult {
  const medians = Object.fromEntries(
    FIGURE_NAMES.map((figure) => [figure, round(median(reports.map(FIGURES[figure])))]),
  ) as Record<Figure, number | null>
  const troubled = reports.filter(
    (r) => troubles(r) > 0 || r.convergence.converged < r.convergence.rooms,
  ).length
  return {
    name,
    runs: reports.length,
    medians,
    helperCpuPercent: round(median(helpers.cpuPercent)),
    helperRssKiBPerUser: round(median(helpers.rssKiBPerUser)),
    roomsHeld: round(median(roomsHeld)),
    heapKiBPerUser: round(median(heapKiBPerUser)),
    troubled,
  }
}

/** Ratios of `ours` to `peer`, figure by figure (below 1: ours needs less). */
export function ratios(ours: ContenderResult, peer: ContenderResult): Record<Figure, number | null> {
  return Object.fromEntries(
    FIGURE_NAMES.map((figure) => {
      const [a, b] = [ours.medians[figure], peer.medians[figure]]
      return [figure, a !== null && b !== null && b > 0 ? round(a / b) : null]
    }),
  ) as Record<Figure, number | null>
}

/** A Markdown table: a row per server, a column per figure; then each Symphony row's ratios to each peer. */
export function formatComparison(c: Comparison): string {
  const cell = (value: number | null) => (value === null ? '-' : String(value))
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`
  const lines = [
    `${c.rooms} rooms, ${c.users} users (medians)`,
    '',
    row([
      'server',
      ...FIGURE_NAMES,
      'helpers CPU (%)',
      'helpers RSS per user (KiB)',
      'heap used per user (KiB)',
      'rooms held',
      'troubled runs',
    ]),
    row(['---', ...FIGURE_NAMES.map(() => '---'), '---', '---', '---', '---', '---']),
    ...c.contenders.map((r) =>
      r.unavailable
        ? row([
            r.name,
            `no result: ${r.unavailable}`,
            ...FIGURE_NAMES.slice(1).map(() => ''),
            '',
            '',
            '',
            '',
            '',
          ])
        : row([
            r.name,
            ...FIGURE_NAMES.map((f) => cell(r.medians[f])),
            cell(r.helperCpuPercent),
            cell(r.helperRssKiBPerUser),
            cell(r.heapKiBPerUser),
            cell(r.roomsHeld),
            String(r.troubled),
          ]),
    ),
  ]
  const ran = c.contenders.filter((r) => !r.unavailable && r.runs > 0)
  const ours = ran.filter((r) => r.name.startsWith('symphony'))
  const peers = ran.filter((r) => !r.name.startsWith('symphony'))
  if (ours.length && peers.length) {
    lines.push('', row(['ratio', ...FIGURE_NAMES]), row(['---', ...FIGURE_NAMES.map(() => '---')]))
    for (const a of ours) {
      for (const b of peers) {
        const r = ratios(a, b)
        lines.push(row([`${a.name} / ${b.name}`, ...FIGURE_NAMES.map((f) => cell(r[f]))]))
      }
    }
  }
  return lines.join('\n')
}

/**
 * RSS per added user between the smallest and the largest size, per server: what a deployment
 * pays for one more user. A process's RSS also rises under load whatever the number of users (its
 * heap grows to the allocation rate), which the figure per user at one size charges to the users:
 * three servers pay that three times. Empty with fewer than two sizes.
 */
export function rssPerAddedUser(comparisons: Comparison[]): string[] {
  const [first, last] = [comparisons[0], comparisons.at(-1)]
  if (!first || !last || first === last || last.users <= first.users) return []
  const total = (c: Comparison, name: string) => {
    const kib = c.contenders.find((r) => r.name === name && !r.unavailable)?.medians['RSS per user (KiB)']
    return kib === null || kib === undefined ? null : kib * c.users
  }
  const slopes = first.contenders.flatMap((r) => {
    const [a, b] = [total(first, r.name), total(last, r.name)]
    return a === null || b === null ? [] : [{ name: r.name, kib: (b - a) / (last.users - first.users) }]
  })
  if (!slopes.length) return []
  const base = slopes.find((s) => s.name === 'symphony')
  return [
    `RSS per added user, ${first.users} -> ${last.users} users (KiB, from the medians):`,
    ...slopes.map(
      (s) =>
        `  ${s.name}: ${s.kib.toFixed(1)}${base && base !== s && base.kib > 0 ? ` (${(s.kib / base.kib).toFixed(2)} x symphony)` : ''}`,
    ),
  ]
}

const round = (value: number | null) => (value === null ? null : Math.round(value * 100) / 100)
