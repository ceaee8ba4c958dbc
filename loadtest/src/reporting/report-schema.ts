import { z } from 'zod'
import { COUNTERS, METRICS } from '../measurement/measures.js'

const milliseconds = z.number().nonnegative()
const latency = z.object({
  count: z.number().int().nonnegative(),
  min: milliseconds,
  mean: milliseconds,
  p50: milliseconds,
  p95: milliseconds,
  p99: milliseconds,
  max: milliseconds,
})
const perMetric = <T extends z.ZodType>(schema: T) =>
  z.object(Object.fromEntries(METRICS.map((name) => [name, schema])) as Record<(typeof METRICS)[number], T>)
const counts = z.object(
  Object.fromEntries(COUNTERS.map((name) => [name, z.number().int().nonnegative()])) as Record<
    (typeof COUNTERS)[number],
    z.ZodNumber
  >,
)
const nullableNumber = z.number().nonnegative().nullable()

/** Every figure of a run, as `--json` writes it. `report.schema.json` is generated from this. */
export const ReportSchema = z.object({
  schema: z.literal('symphony-loadtest-report/1'),
  startedAt: z.iso.datetime(),
  elapsedSeconds: z.number().nonnegative(),
  target: z.object({
    url: z.string(),
    /** Where the server's CPU and memory came from: its /proc entry, its /metrics, or nowhere. */
    statsSource: z.enum(['proc', 'metrics', 'none']),
  }),
  workload: z.object({
    name: z.enum(['symphony', 'beacon', 'single-room']),
    source: z.string(),
    rooms: z.number().int().positive(),
    perRoom: z.number().int().positive(),
    users: z.number().int().positive(),
    docRate: z.number().nonnegative(),
    presenceRate: z.number().nonnegative(),
    writers: z.enum(['all', 'first']),
    edit: z.enum(['set', 'append']),
    rampSeconds: z.number().nonnegative(),
    durationSeconds: z.number().positive(),
    realClients: z.boolean(),
  }),
  agents: z.array(
    z.object({
      agent: z.string(),
      rooms: z.number().int().nonnegative(),
      users: z.number().int().nonnegative(),
      generatorCpuPercent: z.object({ mean: z.number().nonnegative(), max: z.number().nonnegative() }),
    }),
  ),
  /** Milliseconds. */
  latency: perMetric(latency),
  counts,
  drops: z.object({ updates: z.number().int(), presence: z.number().int() }),
  convergence: z.object({
    rooms: z.number().int().nonnegative(),
    converged: z.number().int().nonnegative(),
    failures: z.array(z.object({ room: z.string(), reason: z.string() })),
  }),
  server: z.object({
    cpuSeconds: nullableNumber,
    cpuPercent: z.object({ mean: nullableNumber, max: nullableNumber }),
    rssBytes: z.object({ baseline: nullableNumber, max: nullableNumber, end: nullableNumber }),
    /** Messages the workload asked the server to deliver: each one sent, times the other members of its room. */
    deliveredMessages: z.number().int().nonnegative(),
    cpuMicrosecondsPerDeliveredMessage: nullableNumber,
    rssBytesPerUser: z.number().nullable(),
  }),
  /**
   * The steady state: the seconds after every user has joined and a settling pause, to the end of
   * the load. Connection set-up and its backlog are left out, so these are the per-message costs.
   */
  steady: z.object({
    fromSecond: z.number().int().nonnegative(),
    toSecond: z.number().int().nonnegative(),
    latency: z.object({ update: latency, presence: latency }),
    /** Server CPU over those seconds, divided by the deliveries the messages sent in them asked for. */
    cpuMicrosecondsPerDeliveredMessage: nullableNumber,
    /** The median RSS over those seconds above the baseline, divided by users. */
    rssBytesPerUser: z.number().nullable(),
  }),
  timeline: z.array(
    z.object({
      second: z.number().int().nonnegative(),
      users: z.number().int().nonnegative(),
      latency: perMetric(
        z.object({ count: z.number().int().nonnegative(), p50: milliseconds, p99: milliseconds }),
      ),
      generatorCpuPercent: z.number().nonnegative(),
      serverCpuPercent: nullableNumber,
      serverRssBytes: nullableNumber,
    }),
  ),
  warnings: z.array(z.string()),
  errors: z.array(z.string()),
  /** Each --threshold, what was measured (null: nothing, which fails it) and whether it held. */
  thresholds: z.array(z.object({ expression: z.string(), actual: z.number().nullable(), ok: z.boolean() })),
})

export type Report = z.infer<typeof ReportSchema>

export function reportJsonSchema(): object {
  return z.toJSONSchema(ReportSchema, { target: 'draft-2020-12' })
}
