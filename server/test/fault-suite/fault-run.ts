import { join } from 'node:path'
import type { MotoService } from '@symphony/dev-scripts/services'
import { eventually, uniqueRoom } from '../helpers/clients.js'
import { randomFromSeed } from '../helpers/seeded-random.js'
import { signToken, TEST_SECRET } from '../helpers/tokens.js'
import { check, type Verdict } from './checker.js'
import { FaultCluster } from './fault-cluster.js'
import { FaultInjector } from './fault-injector.js'
import { Ledger } from './ledger.js'
import type { RunProfile } from './profiles.js'
import { RoomPins } from './room-pins.js'
import { awaitAgreement, restViews } from './room-views.js'
import { planSchedule, type Schedule } from './schedule.js'
import { SessionWriter } from './session-writer.js'

export interface FaultRunOptions {
  profile: RunProfile
  seed: number
  /** The suite's own moto. */
  moto: MotoService
  /** Takes every server down and up again before the cold check; default: SIGTERM all, start fresh. */
  coldRestart?: (cluster: FaultCluster) => Promise<void>
  /** Auth on: each writer is a user of its own (client ids bound to it), pins read with a token. */
  auth?: boolean
}

export interface FaultRunReport {
  profile: string
  seed: number
  schedule: Schedule
  sessions: Ledger['sessions']
  /** After the heal, with the servers still up; `agreedAfterMs` null when the copies never agreed. */
  warm: Verdict & { agreedAfterMs: number | null }
  /** After every server was restarted. */
  cold: Verdict
  /** What went wrong while injecting or healing (a server that would not start…). */
  problems: string[]
  /** How long each phase took, in order (ms). */
  phases: [string, number][]
  /** The faults and deletions as played: ms after the writers started, what. */
  played: [number, string][]
  /** What the writers were told and what was deleted (times on this process's performance.now()). */
  ledger: Ledger
  serverErrors: { msg: string; count: number }[]
}

/**
 * One run: a fresh cluster, pins holding every room on every server, writers on every server,
 * the seed's faults and deletions, the heal, then the checks: warm (every server's copy, once they
 * agree) and cold (after every server restarted, through the REST API).
 */
export async function runFaults({
  profile,
  seed,
  moto,
  coldRestart,
  auth,
}: FaultRunOptions): Promise<FaultRunReport> {
  const schedule = planSchedule(randomFromSeed(seed), profile)
  const phases: [string, number][] = []
  let phaseStart = performance.now()
  const phase = (name: string) => {
    phases.push([name, performance.now() - phaseStart])
    phaseStart = performance.now()
  }
  const env = { ...profile.serverEnv, ...(auth ? { AUTH: 'jwt', AUTH_SECRET: TEST_SECRET } : {}) }
  const cluster = await FaultCluster.start({ servers: profile.servers, moto, env })
  const rooms = Array.from({ length: profile.rooms }, (_, i) => uniqueRoom(`fault-${i}`))
  const ledger = new Ledger()
  const urls = Array.from({ length: cluster.size }, (_, i) => cluster.url(i))
  const tokenFor = (room: string, sub: string, access: 'rw' | 'ro') => signToken({ room, sub, access })
  const pinTokens = new Map(
    auth
      ? await Promise.all(rooms.map(async (room) => [room, await tokenFor(room, 'pin', 'ro')] as const))
      : [],
  )
  const pins = new RoomPins(urls, rooms, pinTokens)
  const writers = rooms.flatMap((room, r) =>
    urls.map((url, s) => {
      const name = `r${r}s${s}`
      const tokens = auth ? { tokenFor: () => tokenFor(room, name, 'rw') } : {}
      return new SessionWriter({ url, room, name, ledger, ...profile.writer, ...tokens })
    }),
  )
  const injector = new FaultInjector({
    cluster,
    ledger,
    rooms,
    quietAfterRedisLossMs: profile.quietAfterRedisLossMs,
  })
  try {
    await eventually(() => pins.synced, 'every server holds every room', 30_000)
    phase('start')
    for (const writer of writers) writer.start()
    const startedAt = performance.now()
    ledger.origin = startedAt
    await injector.play(schedule, startedAt)
    await sleepUntil(startedAt + profile.faultMs)
    phase('faults')
    await injector.heal()
    phase('heal')
    await sleepUntil(performance.now() + profile.afterHealMs)
    await Promise.all([...writers.map((writer) => writer.stop(profile.drainMs)), injector.deletions()])
    phase('write and drain')
    const agreement = await awaitAgreement(cluster, rooms, profile.convergeMs)
    const warm = { ...check(ledger, agreement.views), agreedAfterMs: agreement.agreed ? agreement.ms : null }
    phase('warm check')
    pins.destroy()
    await (coldRestart ?? restartAll)(cluster)
    phase('cold restart')
    const cold = check(ledger, await restViews(cluster, rooms))
    phase('cold check')
    return {
      profile: profile.name,
      seed,
      schedule,
      sessions: { ...ledger.sessions },
      warm,
      cold,
      problems: injector.problems,
      phases,
      played: injector.played,
      ledger,
      serverErrors: cluster.errorSummary(),
    }
  } finally {
    pins.destroy()
    await Promise.all(writers.map((writer) => writer.stop(0)))
    const logDir = process.env.SYMPHONY_FAULT_SUITE_LOGS
    if (logDir) cluster.writeLogs(join(logDir, `${profile.name}-${seed}`))
    await cluster.stop()
  }
}

/** SIGTERM every server (each saves its rooms), then start them all again. */
async function restartAll(cluster: FaultCluster): Promise<void> {
  await cluster.terminateAll(15_000)
  await Promise.all(Array.from({ length: cluster.size }, (_, i) => cluster.startServer(i)))
}

function sleepUntil(at: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())))
}
