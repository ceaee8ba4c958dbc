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

type Planned = Pick<FaultEpisode, 'kind' | 'atMs' | 'durationMs'> & Partial<FaultEpisode>

/** Faults in a row, as planSchedule draws them, with nothing else to them. */
function faults(...planned: Planned[]): Schedule {
  const base = {
    server: 0,
    room: 0,
    mode: 'cut',
    slowMs: 0,
    store: 's3',
    killAfter: false,
    killDelayMs: 0,
    redisRestartAfter: false,
  } as const
  return { episodes: planned.map((episode) => ({ ...base, ...episode })), deletes: [] }
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
    const schedule = faults(
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
  it('a fault that empties Redis comes only once every room is held again, one whose owner was killed too', async () => {
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
      // One owner per room: server 1 holds room a throughout; room b's owner, server 0, was killed,
      // and b is held nowhere until its clients bring it back (on whichever server they reach).
      heldState: async (server: number, room: string) =>
        (room === 'a' && server === 1) || (room === 'b' && performance.now() >= heldFrom)
          ? new Uint8Array([0])
          : null,
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
    const schedule = faults(
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

describe('fault injector: ack-kill', () => {
  it('SIGKILLs the server inside the handler of a prompt acknowledgement of its writers; with a Redis restart, restarts it after that', async () => {
    const ledger = new Ledger()
    const events: string[] = []
    let inHandler = false
    const cluster = {
      size: 2,
      url: (i: number) => `ws://s${i}`,
      kill: async (i: number) => {
        events.push(`kill ${i}${inHandler ? ' in the handler' : ''}`)
      },
      startServer: async (i: number) => {
        events.push(`start ${i}`)
      },
      redis: {
        restart: async () => {
          events.push('redis restart')
        },
      },
      isRunning: () => true,
      isPaused: () => false,
      heldState: async () => new Uint8Array([0]),
      deleteRoom: async () => 204,
    } as unknown as FaultCluster
    const injector = new FaultInjector({ cluster, ledger, rooms: ['a', 'b'], quietAfterRedisLossMs: 0 })
    const schedule = faults({
      kind: 'ack-kill',
      atMs: 0,
      durationMs: 100,
      server: 1,
      redisRestartAfter: true,
    })
    schedule.deletes.push({ atMs: 0, room: 1, server: 0 })
    const acknowledge = (url: string, room: string, id: string, answeredMs: number) => {
      inHandler = true
      const at = performance.now()
      ledger.acknowledged({ url, room, ids: [id], at, newestSentAt: at - answeredMs })
      inHandler = false
    }
    // Writers acknowledged every 10 ms: server 0's first, then on server 1 a slow answer and a
    // prompt one in room b (to be deleted) before the one to kill at.
    let turn = 0
    const writers = setInterval(() => {
      acknowledge('ws://s0', 'a', `s0.${turn}`, 5)
      acknowledge('ws://s1', 'a', `s1.slow.${turn}`, 50)
      acknowledge('ws://s1', 'b', `s1.b.${turn}`, 5)
      acknowledge('ws://s1', 'a', `s1.${turn++}`, 5)
    }, 10)
    await injector.play(schedule, performance.now())
    clearInterval(writers)
    await injector.deletions()
    assert.deepEqual(events, ['kill 1 in the handler', 'redis restart', 'start 1'])
    assert.ok(injector.played.some(([, what]) => /SIGKILLed at the acknowledgement of s1\.\d+ /.test(what)))
  })
})
