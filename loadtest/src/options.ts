import { randomBytes } from 'node:crypto'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { z } from 'zod'
import { parseThreshold, type Threshold } from './reporting/thresholds.js'
import { readSecret, refuseSecretsInArguments, TOKEN_SECRET } from './secrets.js'
import { UsageError } from './usage-error.js'
import { PLACEMENTS, type Placement, type RoomPlan } from './virtual-users/room-run.js'
import { PROTOCOLS, type Protocol } from './virtual-users/wire.js'
import { WORKLOAD_NAMES, WORKLOADS, type Workload } from './virtual-users/workloads.js'

/** A run, whoever drives it: this process alone, or a coordinator and its agents. */
export interface RunSettings {
  /** The sync servers; a room's users are spread across them in turn (see `placement`). */
  urls: string[]
  /** `spread`: a room's users take the servers in turn; `room`: each room on one server, rooms in turn. */
  placement: Placement
  workload: Workload
  durationSeconds: number
  rampSeconds: number
  tokenSecret: string | undefined
  realClients: boolean
  /** The servers' framing. */
  protocol: Protocol
  /** The processes whose CPU and memory count as the server's (summed), if on this machine. */
  serverPids: number[]
  roomPrefix: string
  jsonFile: string
  htmlFile: string
  quiet: boolean
  /** Pass/fail criteria: any crossed makes the command exit 99. */
  thresholds: Threshold[]
  /** How long the users' tokens stay valid after the load's planned end (drain and convergence check). */
  tokenMarginSeconds: number
}

export const RUN_OPTIONS = {
  url: { type: 'string', default: 'ws://127.0.0.1:1234' },
  workload: { type: 'string', default: 'symphony' },
  rooms: { type: 'string' },
  'per-room': { type: 'string' },
  duration: { type: 'string', default: '30' },
  ramp: { type: 'string', default: '10' },
  'doc-rate': { type: 'string' },
  'presence-rate': { type: 'string' },
  'token-secret-file': { type: 'string' },
  'real-clients': { type: 'boolean', default: false },
  protocol: { type: 'string', default: 'y-websocket' },
  placement: { type: 'string', default: 'spread' },
  'server-pid': { type: 'string' },
  'room-prefix': { type: 'string' },
  json: { type: 'string' },
  html: { type: 'string' },
  quiet: { type: 'boolean', default: false },
  threshold: { type: 'string', multiple: true },
  'token-margin': { type: 'string', default: '60' },
} as const

const count = (max: number) => z.coerce.number().int().min(1).max(max)
const rate = z.coerce.number().min(0).max(1000)
const seconds = z.coerce.number().min(0).max(86_400)

/** The items of a comma-separated option, each then checked on its own. */
const commaSeparated = z.string().transform((v) => v.split(','))

const RunArguments = z.object({
  url: commaSeparated.pipe(
    z
      .array(
        z
          .string()
          .refine(
            (v) => /^(ws|wss|http|https):\/\/./.test(v) && URL.canParse(v),
            'must be a ws:// or wss:// URL',
          )
          .transform((v) => v.replace(/^http/, 'ws').replace(/\/+$/, '')),
      )
      .min(1),
  ),
  workload: z.enum(WORKLOAD_NAMES),
  rooms: count(1_000_000).optional(),
  'per-room': count(100_000).optional(),
  duration: seconds.refine((v) => v > 0, 'must be more than 0 seconds'),
  ramp: seconds,
  'doc-rate': rate.optional(),
  'presence-rate': rate.optional(),
  'real-clients': z.boolean(),
  protocol: z.enum(PROTOCOLS).default('y-websocket'),
  placement: z.enum(PLACEMENTS).default('spread'),
  'server-pid': commaSeparated.pipe(z.array(z.coerce.number<string>().int().positive())).optional(),
  'room-prefix': z
    .string()
    .regex(/^[A-Za-z0-9._~:-]{1,64}$/, 'letters, digits and . _ ~ : - only (1-64)')
    .optional(),
  json: z.string().optional(),
  html: z.string().optional(),
  quiet: z.boolean(),
  threshold: z.array(z.string()).default([]),
  'token-margin': z.coerce.number().int().min(1).max(86_400).optional(),
})

export { UsageError }

export type OptionValues = Record<string, string | boolean | string[] | undefined>

/**
 * Parses `argv` against the run options plus `extra`; throws UsageError with one clear line,
 * also when argv carries a secret itself (see secrets.ts).
 */
export function parseCommandLine(
  argv: string[],
  extra: NonNullable<ParseArgsConfig['options']> = {},
): OptionValues {
  refuseSecretsInArguments(argv)
  try {
    const { values } = parseArgs({ args: argv, options: { ...RUN_OPTIONS, ...extra }, strict: true })
    return values as OptionValues
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

export function runSettings(values: OptionValues, env: NodeJS.ProcessEnv): RunSettings {
  const parsed = RunArguments.safeParse({
    ...values,
  })
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new UsageError(`--${issue?.path.join('.')}: ${issue?.message}`)
  }
  const a = parsed.data
  const thresholds = a.threshold.map((expression) => {
    try {
      return parseThreshold(expression)
    } catch (error) {
      throw new UsageError(`--threshold ${(error as Error).message}`)
    }
  })
  const preset = WORKLOADS[a.workload]
  const workload: Workload = {
    ...preset,
    rooms: a.rooms ?? preset.rooms,
    perRoom: a['per-room'] ?? preset.perRoom,
    docRate: a['doc-rate'] ?? preset.docRate,
    presenceRate: a['presence-rate'] ?? preset.presenceRate,
  }
  if (a.protocol !== 'y-websocket' && a['real-clients'])
    throw new UsageError('--real-clients: the client library speaks y-websocket only')
  if (workload.perRoom < 2) throw new UsageError('--per-room: at least 2 (a sender and the observer)')
  const reports = `${REPORTS_FOLDER}/${new Date().toISOString().replace(/[:.]/g, '-')}-${a.workload}`
  return {
    urls: a.url,
    placement: a.placement,
    workload,
    durationSeconds: a.duration,
    rampSeconds: a.ramp,
    tokenSecret: readSecret(TOKEN_SECRET, values, env),
    realClients: a['real-clients'],
    protocol: a.protocol,
    serverPids: a['server-pid'] ?? [],
    roomPrefix: a['room-prefix'] ?? `loadtest-${randomBytes(3).toString('hex')}`,
    jsonFile: a.json ?? `${reports}.json`,
    htmlFile: a.html ?? `${reports}.html`,
    quiet: a.quiet,
    thresholds,
    tokenMarginSeconds: a['token-margin'] ?? 60,
  }
}

/** Where a run's reports go unless --json / --html say otherwise: one pair per run, named by its start. */
export const REPORTS_FOLDER = 'loadtest-results'

/** Every room of the run, each with the number of its first user. */
export function planRooms(settings: RunSettings): RoomPlan[] {
  const { rooms, perRoom } = settings.workload
  return Array.from({ length: rooms }, (_, i) => ({
    name: `${settings.roomPrefix}-${i}`,
    firstUser: i * perRoom,
  }))
}
