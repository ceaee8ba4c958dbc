// A fault whose healing overruns its planned time must still leave the next fault its gap: after a
// slow crash-all restart, a Redis wipe the instant the servers listen would hit rooms nobody has
// reloaded and saved yet (the seed-9 loss of 2026-11-26, a double fault the schedule excludes).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { FaultCluster } from './fault-suite/fault-cluster.js'
import { FaultInjector } from './fault-suite/fault-injector.js'
import { Ledger } from './fault-suite/ledger.js'
import type { FaultEpisode, Schedule } from './fault-suite/schedule.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Two faults in a row, as planSchedule draws them, with nothing else to them. */
function twoFaults(
  first: Pick<FaultEpisode, 'kind' | 'atMs' | 'durationMs'>,
  second: Pick<FaultEpisode, 'kind' | 'atMs' | 'durationMs'>,
): Schedule {
  const base = { server: 0, mode: 'cut', slowMs: 0, store: 's3', killAfter: false, killDelayMs: 0 } as const
  return {
    episodes: [
      { ...base, ...first },
      { ...base, ...second },
    ] as FaultEpisode[],
    deletes: [],
  }
}

describe('fault injector: gaps between faults', () => {
  it('a fault after a crash-all whose restart overran still waits its gap (>= 1 s) after the restart', async () => {
    let failures = 0
    let redisStoppedAt = 0
    const running = [true, true, true]
    const cluster = {
      size: 3,
      kill: async (i: number) => {
        running[i] = false
      },
      // The loaded machine: the restart takes 1.5 s more than the crash-all's planned 0.5 s.
      startServer: async (i: number) => {
        await sleep(1_500)
        running[i] = true
      },
      isRunning: (i: number) => running[i],
      journalFailures: async () => (redisStoppedAt ? ++failures : failures),
      redis: {
        stop: async () => {
          redisStoppedAt = performance.now()
        },
        start: async () => {},
      },
      links: () => ({}),
      resume: () => {},
    } as unknown as FaultCluster
    const injector = new FaultInjector({ cluster, ledger: new Ledger(), rooms: [], quietAfterRedisLossMs: 0 })
    // The next fault 1.0–2.5 s (GAP_MS) after the crash-all's planned end.
    const schedule = twoFaults(
      { kind: 'crash-all', atMs: 0, durationMs: 500 },
      { kind: 'redis-outage-kill', atMs: 1_500, durationMs: 200 },
    )
    const startedAt = performance.now()
    await injector.play(schedule, startedAt)
    const over = injector.played.find(([, what]) => what === 'crash-all over')?.[0] ?? Number.NaN
    const redisDown = redisStoppedAt - startedAt
    assert.ok(
      redisDown - over >= 1_000,
      `Redis was emptied ${Math.round(redisDown - over)} ms after the servers were back (crash-all over at ${Math.round(over)} ms)`,
    )
  })
})

describe('fault injector: a Redis wipe waits for the rooms', () => {
  it('a fault that empties Redis comes only once a live server holds every room again', async () => {
    const running = [true, true]
    let heldFrom = Number.POSITIVE_INFINITY
    let redisStoppedAt = 0
    const cluster = {
      size: 2,
      kill: async (i: number) => {
        running[i] = false
      },
      startServer: async (i: number) => {
        running[i] = true
        // Its clients bring room b back well after the server listens (a loaded machine).
        heldFrom = Math.min(heldFrom, performance.now() + 2_000)
      },
      isRunning: (i: number) => running[i],
      isPaused: () => false,
      heldState: async (_server: number, room: string) =>
        room === 'a' || performance.now() >= heldFrom ? new Uint8Array([0]) : null,
      redis: {
        restart: async () => {
          redisStoppedAt = performance.now()
        },
      },
      links: () => ({}),
      resume: () => {},
    } as unknown as FaultCluster
    const injector = new FaultInjector({
      cluster,
      ledger: new Ledger(),
      rooms: ['a', 'b'],
      quietAfterRedisLossMs: 0,
    })
    const schedule = twoFaults(
      { kind: 'kill', atMs: 0, durationMs: 100 },
      { kind: 'redis-restart', atMs: 200, durationMs: 100 },
    )
    await injector.play(schedule, performance.now())
    assert.ok(
      redisStoppedAt >= heldFrom,
      `Redis restarted ${Math.round(heldFrom - redisStoppedAt)} ms before room b was held`,
    )
  })
})
