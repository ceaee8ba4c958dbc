import { randomInt } from 'node:crypto'
import type { WriterSettings } from './session-writer.js'

export type FaultKind =
  /** SIGKILL one server, restart it. */
  | 'kill'
  /** SIGSTOP one server, SIGCONT it. */
  | 'stall'
  /** Redis restarted without persistence: the journal is gone. */
  | 'redis-restart'
  /** Redis down for longer than the servers' Redis client retries, one server SIGKILLed before it is back. */
  | 'redis-outage-kill'
  /** moto (S3 and DynamoDB) SIGSTOPped, then SIGCONT. */
  | 'moto-pause'
  /** Every server SIGKILLed at once, then restarted. */
  | 'crash-all'
  /** One server's link to Redis cut, hung or slowed while its clients keep writing; sometimes SIGKILLed after. */
  | 'redis-link'
  /** The same for one server's links to S3 and/or DynamoDB. */
  | 'store-link'
  /**
   * One server SIGKILLed as one of its writers receives a prompt acknowledgement: the edit is in
   * the journal alone, in no snapshot yet. Restarted after a while, or only after Redis restarted
   * without persistence.
   */
  | 'ack-kill'
  /** The server that owns a room (holds its copy) SIGKILLed, restarted later (issue #48). */
  | 'owner-kill'
  /** The owner of a room SIGSTOPped for longer than its lease: it wakes up fenced, its clients move. */
  | 'owner-stall'
  /** The owner of a room cut off from Redis and DynamoDB for longer than its lease, not from its clients. */
  | 'owner-cut-off'

export const ALL_FAULTS: FaultKind[] = [
  'kill',
  'stall',
  'redis-restart',
  'redis-outage-kill',
  'moto-pause',
  'crash-all',
  'redis-link',
  'store-link',
  'ack-kill',
  'owner-kill',
  'owner-stall',
  'owner-cut-off',
]

/** The shape of one run; with a seed it fixes the whole schedule. */
export interface RunProfile {
  name: string
  rooms: number
  servers: number
  /** How long the writers write under the fault schedule (the schedule fits inside). */
  faultMs: number
  /** Writing after the heal, before the writers stop. */
  afterHealMs: number
  /** What the schedule draws from; none: a run without faults. */
  kinds: FaultKind[]
  /** What its first fault is drawn from; an ack-kill there always ends in a Redis restart. */
  openingKinds: FaultKind[]
  /** What its last fault is drawn from, so a short run always has a heavy one. */
  finaleKinds: FaultKind[]
  deletes: number
  /**
   * redis-outage-kill: how long the schedule expects Redis to be down (the servers' journal writes
   * fail within REDIS_COMMAND_TIMEOUT_MS, 5 s); the outage lasts until they fail, at most twice this.
   */
  redisOutageMs: number
  /** No fault for this long after Redis lost its data: a few snapshot intervals and retries. */
  quietAfterRedisLossMs: number
  writer: WriterSettings
  /** How long the writers' last sessions may still wait for their answer once the writers stop. */
  drainMs: number
  /** How long the replicas get to agree after the heal. */
  convergeMs: number
  /** Server settings on top of the cluster's wiring. */
  serverEnv: Record<string, string>
}

const SERVER_ENV = {
  SNAPSHOT_INTERVAL_MS: '3000',
  ROOM_GRACE_MS: '1000',
  REGISTRY_LEASE_MS: '2000',
  SHUTDOWN_TIMEOUT_MS: '10000',
}

const WRITER: WriterSettings = {
  typingMs: 1_500,
  editIntervalMs: 200,
  maxEdits: 80,
  concurrency: 2,
  connectTimeoutMs: 5_000,
  ackTimeoutMs: 30_000,
  pauseMs: 300,
}

const BASE: Omit<RunProfile, 'name' | 'rooms' | 'faultMs' | 'kinds' | 'finaleKinds' | 'deletes'> = {
  servers: 3,
  openingKinds: [],
  afterHealMs: 2_000,
  redisOutageMs: 12_000,
  quietAfterRedisLossMs: 10_000,
  writer: WRITER,
  drainMs: 4_000,
  convergeMs: 10_000,
  serverEnv: SERVER_ENV,
}

const HEAVY: FaultKind[] = ['redis-outage-kill', 'redis-link', 'crash-all']

/**
 * The run inside `npm test`, in about 40 s: an ack-kill followed by a Redis restart (the loss of
 * issue #46; with the quiet after it, some 27 s), a few more faults and a heavy one.
 */
export function shortProfile(): RunProfile {
  return {
    ...BASE,
    name: 'short',
    rooms: 6,
    faultMs: 43_000,
    kinds: ALL_FAULTS,
    openingKinds: ['ack-kill'],
    finaleKinds: HEAVY,
    deletes: 2,
  }
}

/** `npm run test:long`: every kind of fault, 20 rooms, `seconds` of faults per seed. */
export function longProfile(seconds: number): RunProfile {
  return {
    ...BASE,
    name: `long${seconds}`,
    rooms: 20,
    faultMs: seconds * 1000,
    // Twenty rooms on three servers on a shared machine: one session at a time per writer.
    writer: { ...WRITER, concurrency: 1 },
    kinds: ALL_FAULTS,
    finaleKinds: HEAVY,
    deletes: Math.max(2, Math.round(seconds / 10)),
  }
}

/** The positive control: the same writers, no faults, no deletions. */
export function quietProfile(): RunProfile {
  return { ...BASE, name: 'quiet', rooms: 4, faultMs: 6_000, kinds: [], finaleKinds: [], deletes: 0 }
}

/** The negative control's: nothing is saved on a timer or on unload, so only the journal holds the edits. */
export function unsavedProfile(): RunProfile {
  return {
    ...quietProfile(),
    name: 'unsaved',
    rooms: 3,
    faultMs: 4_000,
    afterHealMs: 0,
    serverEnv: { ...SERVER_ENV, SNAPSHOT_INTERVAL_MS: '3600000', ROOM_GRACE_MS: '600000' },
  }
}

/** The variable that replays one run: `<seed>` (the short run) or `long<seconds>:<seed>`. */
export const SEED_VARIABLE = 'SYMPHONY_FAULT_SUITE_SEED'

/** One run to make: its profile, its seed, and the value of `SEED_VARIABLE` that replays it. */
export interface SeededRun {
  profile: RunProfile
  seed: number
  replay: string
}

export function seededRun(spec: string): SeededRun {
  const match = /^(?:long(\d+):)?(\d+)$/.exec(spec.trim())
  if (!match) throw new Error(`${SEED_VARIABLE}=${spec}: expected <seed> or long<seconds>:<seed>`)
  const seed = Number(match[2])
  const profile = match[1] ? longProfile(Number(match[1])) : shortProfile()
  return { profile, seed, replay: match[1] ? `long${match[1]}:${seed}` : String(seed) }
}

/**
 * The runs the environment asks for: the one `SYMPHONY_FAULT_SUITE_SEED` names; else
 * `SYMPHONY_FAULT_SEEDS` fresh long runs of `SYMPHONY_FAULT_SECONDS` (default 90) each; else one
 * fresh short run.
 */
export function requestedRuns(env: Record<string, string | undefined>): SeededRun[] {
  const named = env[SEED_VARIABLE]
  if (named) return [seededRun(named)]
  const fresh = () => randomInt(2 ** 31)
  const count = Number(env.SYMPHONY_FAULT_SEEDS ?? 0)
  if (!Number.isInteger(count) || count < 0) throw new Error('SYMPHONY_FAULT_SEEDS: a whole number of runs')
  if (count === 0) return [seededRun(String(fresh()))]
  const seconds = Number(env.SYMPHONY_FAULT_SECONDS ?? 90)
  if (!Number.isInteger(seconds) || seconds < 10) throw new Error('SYMPHONY_FAULT_SECONDS: at least 10')
  return Array.from({ length: count }, () => seededRun(`long${seconds}:${fresh()}`))
}
