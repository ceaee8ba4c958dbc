import type { Report } from './report-schema.js'

/** Pass/fail criteria on a run's figures, as k6's thresholds: `metric op value`, e.g. `doc.p99<50`. */
export interface Threshold {
  expression: string
  metric: string
  op: Operator
  value: number
}

export interface ThresholdVerdict {
  expression: string
  /** The measured value, or null when the run could not measure it (then the threshold fails). */
  actual: number | null
  ok: boolean
}

const OPERATORS = ['<=', '>=', '==', '!=', '<', '>'] as const
type Operator = (typeof OPERATORS)[number]

type Latency = Report['latency']['update']
/**
 * A latency's figures. With no sample, only `count` (0) was measured: a percentile of nothing is
 * no figure (not 0 ms), so a threshold on it fails rather than passing a run that measured nothing.
 */
const latencyFigures = (prefix: string, read: (report: Report) => Latency) =>
  Object.fromEntries(
    (['p50', 'p95', 'p99', 'max', 'mean', 'min', 'count'] as const).map((figure) => [
      `${prefix}.${figure}`,
      (report: Report) => {
        const latency = read(report)
        return figure === 'count' || latency.count > 0 ? latency[figure] : null
      },
    ]),
  )

/**
 * What a threshold can name. Latencies in milliseconds (`doc` is the document update broadcast,
 * `presence` the presence broadcast, `connect` connect + sync; `steady.*` only the steady state).
 */
export const THRESHOLD_METRICS: Record<string, (report: Report) => number | null> = {
  ...latencyFigures('doc', (r) => r.latency.update),
  ...latencyFigures('presence', (r) => r.latency.presence),
  ...latencyFigures('connect', (r) => r.latency.connect),
  ...latencyFigures('steady.doc', (r) => r.steady.latency.update),
  ...latencyFigures('steady.presence', (r) => r.steady.latency.presence),
  drops: (r) => r.drops.updates + r.drops.presence,
  'drops.doc': (r) => r.drops.updates,
  'drops.presence': (r) => r.drops.presence,
  errors: (r) => r.counts.connectErrors + r.counts.errors + r.counts.unexpectedCloses,
  'errors.connect': (r) => r.counts.connectErrors,
  'errors.closes': (r) => r.counts.unexpectedCloses,
  diverged: (r) => r.convergence.rooms - r.convergence.converged,
  'cpu.mean': (r) => r.server.cpuPercent.mean,
  'cpu.max': (r) => r.server.cpuPercent.max,
  'cpu.per_message': (r) => r.server.cpuMicrosecondsPerDeliveredMessage,
  'rss.max': (r) => (r.server.rssBytes.max === null ? null : r.server.rssBytes.max / 2 ** 20),
  'rss.per_user': (r) => (r.server.rssBytesPerUser === null ? null : r.server.rssBytesPerUser / 1024),
  'generator.cpu.max': (r) => Math.max(0, ...r.agents.map((a) => a.generatorCpuPercent.max)),
}

/** For --help: the metric names, grouped. */
export const THRESHOLD_HELP = `  doc.* presence.* connect.* steady.doc.* steady.presence.*   latency in ms, * = p50 p95 p99 max mean min count
  drops drops.doc drops.presence   edits and presence states never seen by the observer
  errors errors.connect errors.closes   refused connections, errors, unexpected closes
  diverged   rooms whose fresh client did not sync the observer's state
  cpu.mean cpu.max (server %)  cpu.per_message (us)  rss.max (MiB)  rss.per_user (KiB)  generator.cpu.max (%)`

/** Reads `metric op value`; throws a message naming what is wrong. */
export function parseThreshold(expression: string): Threshold {
  const match = /^\s*([a-z][a-z0-9_.]*)\s*(<=|>=|==|!=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/.exec(expression)
  if (!match) {
    throw new Error(
      `"${expression}" is not "metric op value" (op: ${OPERATORS.join(' ')}; e.g. "doc.p99<50", "drops==0")`,
    )
  }
  const [, metric = '', op, value] = match
  if (!(metric in THRESHOLD_METRICS)) {
    throw new Error(`"${expression}": unknown metric "${metric}" (--help lists them)`)
  }
  return { expression: expression.trim(), metric, op: op as Operator, value: Number(value) }
}

export function judge(thresholds: Threshold[], report: Report): ThresholdVerdict[] {
  return thresholds.map((threshold) => {
    const actual = THRESHOLD_METRICS[threshold.metric]?.(report) ?? null
    return { expression: threshold.expression, actual, ok: actual !== null && holds(threshold, actual) }
  })
}

function holds({ op, value }: Threshold, actual: number): boolean {
  switch (op) {
    case '<':
      return actual < value
    case '<=':
      return actual <= value
    case '>':
      return actual > value
    case '>=':
      return actual >= value
    case '==':
      return actual === value
    case '!=':
      return actual !== value
  }
}

/** One line per threshold: ✓ or ✗, the expression and what was measured. */
export function describeVerdicts(verdicts: ThresholdVerdict[]): string {
  return verdicts.map((v) => `${v.ok ? '✓' : '✗'} ${v.expression}  (measured ${measured(v)})`).join('\n')
}

/** What a verdict measured, rounded for reading; "nothing" when the run could not measure it. */
export const measured = ({ actual }: ThresholdVerdict): string =>
  actual === null ? 'nothing' : String(Math.round(actual * 1000) / 1000)

/** k6's exit code when thresholds are crossed. */
export const THRESHOLDS_CROSSED_EXIT_CODE = 99
