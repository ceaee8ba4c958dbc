import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { tokenMinter } from './distribution/tokens.js'
import { Measures } from './measurement/measures.js'
import { median } from './measurement/median.js'
import { metric } from './measurement/server-stats.js'
import { readSecret, TOKEN_SECRET } from './secrets.js'
import { UsageError } from './usage-error.js'
import { LightUser } from './virtual-users/light-user.js'

/** A soak: rooms come and go for hours while the server's memory and open rooms are sampled. */
export interface SoakSettings {
  url: string
  /** Rooms open at any moment; each is replaced by a fresh one when its users leave. */
  rooms: number
  perRoom: number
  durationSeconds: number
  /** Mean lifetime of a room's users (each lives 50–150 % of it). */
  churnSeconds: number
  sampleSeconds: number
  /** Edits per user per second (each user also moves its cursor as often). */
  docRate: number
  tokenSecret: string | undefined
  roomPrefix: string
}

export interface SoakSample {
  atSeconds: number
  heapBytes: number
  rssBytes: number
  rooms: number
  connections: number
}

export interface SoakVerdict {
  /** Median of the last half of the samples after warm-up minus median of the first half. */
  heapGrowthBytes: number
  rssGrowthBytes: number
  roomsGrowth: number
  flat: boolean
}

export interface SoakReport {
  /** The settings, but never the secret: the report is written to disk and shared. */
  settings: Omit<SoakSettings, 'tokenSecret'> & { tokens: boolean }
  samples: SoakSample[]
  /** Rooms that were joined, used and left. */
  roomsChurned: number
  errors: string[]
  verdict: SoakVerdict
}

/** Memory may wobble this much (the larger of the two) between halves and still be flat. */
const HEAP_SLACK = { bytes: 8 * 2 ** 20, share: 0.1 }
const RSS_SLACK = { bytes: 24 * 2 ** 20, share: 0.1 }

export async function runSoak(
  settings: SoakSettings,
  onSample?: (sample: SoakSample) => void,
): Promise<SoakReport> {
  const measures = new Measures()
  const mint = tokenMinter(settings.tokenSecret, settings.durationSeconds + 3_600)
  const startedAt = performance.now()
  const endsAt = startedAt + settings.durationSeconds * 1000
  const samples: SoakSample[] = []
  let roomsChurned = 0
  let sampling = Promise.resolve()
  const sampler = setInterval(() => {
    sampling = sampling.then(async () => {
      const sample = await readServer(settings.url, (performance.now() - startedAt) / 1000)
      if (!sample) return measures.error('errors', 'the server did not answer /metrics')
      samples.push(sample)
      onSample?.(sample)
    })
  }, settings.sampleSeconds * 1000)

  const runSlot = async (slot: number) => {
    for (let generation = 0; performance.now() < endsAt; generation++) {
      const room = `${settings.roomPrefix}-${slot}-${generation}`
      const tokens = await Promise.all(
        Array.from({ length: settings.perRoom }, (_, i) => mint(room, slot * settings.perRoom + i)),
      )
      const users = tokens.map(
        (token) => new LightUser({ serverUrl: settings.url, room, token, edit: 'set', measures }),
      )
      const joined = await Promise.allSettled(users.map((user) => user.connect()))
      const lifetimeMs = settings.churnSeconds * 1000 * (0.5 + Math.random())
      await act(users, Math.min(endsAt, performance.now() + lifetimeMs), settings.docRate)
      await Promise.all(users.map((user) => user.close()))
      if (joined.every((result) => result.status === 'fulfilled')) roomsChurned++
    }
  }
  await Promise.all(Array.from({ length: settings.rooms }, (_, slot) => runSlot(slot)))
  clearInterval(sampler)
  await sampling
  const { tokenSecret, ...shown } = settings
  return {
    settings: { ...shown, tokens: tokenSecret !== undefined },
    samples,
    roomsChurned,
    errors: [...measures.errorMessages],
    verdict: judge(samples),
  }
}

/** Every user edits its shape and moves its cursor `rate` times a second until `until`. */
async function act(users: LightUser[], until: number, rate: number): Promise<void> {
  let sequence = 0
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(1000 / rate, until - performance.now())))
    sequence++
    for (const [u, user] of users.entries()) {
      const t = performance.now()
      const x = Math.random() * 1000
      user.edit({ u, s: sequence, t, x, y: x / 2 })
      user.setPresence({ name: `user-${u}`, cursor: { x, y: x / 2 }, s: sequence, t })
    }
  }
}

async function readServer(url: string, atSeconds: number): Promise<SoakSample | null> {
  try {
    const response = await fetch(new URL('/metrics', url.replace(/^ws/, 'http')), {
      signal: AbortSignal.timeout(5_000),
    })
    const text = await response.text()
    const value = (name: string) => metric(text, name) ?? Number.NaN
    const sample = {
      atSeconds,
      heapBytes: value('nodejs_heap_size_used_bytes'),
      rssBytes: value('process_resident_memory_bytes'),
      rooms: value('symphony_rooms'),
      connections: value('symphony_connections'),
    }
    return Object.values(sample).some(Number.isNaN) ? null : sample
  } catch {
    return null
  }
}

/**
 * Drops the first quarter (warm-up), then compares the two halves of the rest: the heap by its
 * floor (the lowest sample of each half, what survived the last collection), because used heap is
 * a sawtooth whose period the garbage collector changes as it resizes its spaces, which moves a
 * median without anything being retained; RSS and open rooms by their medians.
 */
export function judge(samples: SoakSample[]): SoakVerdict {
  const steady = samples.slice(Math.floor(samples.length / 4))
  const half = Math.floor(steady.length / 2)
  const [first, second] = [steady.slice(0, half), steady.slice(half)]
  const median = (part: SoakSample[], pick: (s: SoakSample) => number) => medianOf(part.map(pick))
  const floor = (part: SoakSample[], pick: (s: SoakSample) => number) =>
    part.length > 0 ? Math.min(...part.map(pick)) : Number.NaN
  const heap = (s: SoakSample) => s.heapBytes
  const rss = (s: SoakSample) => s.rssBytes
  const rooms = (s: SoakSample) => s.rooms
  const heapGrowthBytes = floor(second, heap) - floor(first, heap)
  const rssGrowthBytes = median(second, rss) - median(first, rss)
  const roomsGrowth = median(second, rooms) - median(first, rooms)
  const within = (value: number, base: number, slack: typeof HEAP_SLACK) =>
    value <= Math.max(slack.bytes, slack.share * base)
  return {
    heapGrowthBytes,
    rssGrowthBytes,
    roomsGrowth,
    flat:
      half >= 2 &&
      within(heapGrowthBytes, floor(first, heap), HEAP_SLACK) &&
      within(rssGrowthBytes, median(first, rss), RSS_SLACK) &&
      roomsGrowth <= Math.max(2, 0.1 * median(first, rooms)),
  }
}

/** NaN for no values: a verdict on too few samples is never flat. */
function medianOf(values: number[]): number {
  return median(values) ?? Number.NaN
}

const SoakArguments = z.object({
  url: z
    .string()
    .refine((v) => /^(ws|wss|http|https):\/\/./.test(v) && URL.canParse(v), 'must be a ws:// or wss:// URL')
    .transform((v) => v.replace(/^http/, 'ws').replace(/\/+$/, '')),
  rooms: z.coerce.number().int().min(1).max(100_000).default(20),
  'per-room': z.coerce.number().int().min(1).max(1_000).default(4),
  duration: z.coerce
    .number()
    .min(1)
    .max(7 * 86_400),
  churn: z.coerce.number().min(0.5).max(86_400).default(60),
  sample: z.coerce.number().min(0.5).max(3_600).default(30),
  'doc-rate': z.coerce.number().min(0.01).max(100).default(1),
  'room-prefix': z
    .string()
    .regex(/^[A-Za-z0-9._~:-]{1,64}$/, 'letters, digits and . _ ~ : - only')
    .optional(),
})

/** The soak command's options: the run options it shares, plus --churn and --sample. */
export const SOAK_OPTIONS = {
  churn: { type: 'string' },
  sample: { type: 'string' },
} as const

export function soakSettings(values: Record<string, unknown>, env: NodeJS.ProcessEnv): SoakSettings {
  const parsed = SoakArguments.safeParse({
    ...values,
    // A soak lasts hours unless told otherwise; the run default (30 s) is not meant for it.
    duration: values.duration === '30' ? '3600' : values.duration,
  })
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new UsageError(`--${issue?.path.join('.')}: ${issue?.message}`)
  }
  const a = parsed.data
  return {
    url: a.url,
    rooms: a.rooms,
    perRoom: a['per-room'],
    durationSeconds: a.duration,
    churnSeconds: a.churn,
    sampleSeconds: a.sample,
    docRate: a['doc-rate'],
    tokenSecret: readSecret(TOKEN_SECRET, values, env),
    roomPrefix: a['room-prefix'] ?? `soak-${randomBytes(3).toString('hex')}`,
  }
}

const MiB = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`

export function describeSample(sample: SoakSample): string {
  return `[soak ${sample.atSeconds.toFixed(0)} s] heap ${MiB(sample.heapBytes)}  rss ${MiB(sample.rssBytes)}  rooms ${sample.rooms}  connections ${sample.connections}`
}

export function describeVerdict(report: SoakReport): string {
  const { verdict } = report
  return [
    `soak: ${report.samples.length} samples over ${report.settings.durationSeconds} s, ${report.roomsChurned} rooms churned, ${report.errors.length} distinct errors`,
    `  heap growth ${MiB(verdict.heapGrowthBytes)}, RSS growth ${MiB(verdict.rssGrowthBytes)}, open rooms ${verdict.roomsGrowth >= 0 ? '+' : ''}${verdict.roomsGrowth} (second half of the steady samples minus the first: the heap's lowest sample, RSS and rooms' medians)`,
    verdict.flat
      ? '  flat: memory and open rooms hold steady'
      : '  GROWING: memory or open rooms kept rising',
    ...report.errors.map((error) => `  error: ${error}`),
  ].join('\n')
}
