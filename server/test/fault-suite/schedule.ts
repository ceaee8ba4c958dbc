import { DEFAULT_TIMINGS } from '../../src/server-options.js'
import type { FaultKind, RunProfile } from './profiles.js'

export type LinkMode = 'cut' | 'blackhole' | 'slow'
export type Store = 's3' | 'dynamodb' | 'both'

/** One fault: planned `atMs` after the writers start, lasting `durationMs`, then healed. */
export interface FaultEpisode {
  kind: FaultKind
  atMs: number
  /** The server it hits (kinds that hit one). */
  server: number
  /** owner-*: the room (its number) whose owner it hits, whichever server that is when it comes. */
  room: number
  durationMs: number
  /** redis-link, store-link: what happens to the link. */
  mode: LinkMode
  /** slow mode: each chunk's delay. */
  slowMs: number
  /** store-link: which store. */
  store: Store
  /** redis-link, store-link: SIGKILL the server at the end of the fault, before the link heals. */
  killAfter: boolean
  /** redis-outage-kill: how long after the server's first failed journal write it dies. */
  killDelayMs: number
  /**
   * ack-kill: Redis restarted without persistence `durationMs` after the kill, the server started
   * only after it (a restarted server would replay its journal stream and save what it held).
   */
  redisRestartAfter: boolean
}

/** A REST deletion of room number `room` through server `server`, `atMs` after the writers start. */
export interface PlannedDelete {
  atMs: number
  room: number
  server: number
}

export interface Schedule {
  episodes: FaultEpisode[]
  deletes: PlannedDelete[]
}

/** Gaps between faults: the cluster works normally for a while between two. */
const GAP_MS: [number, number] = [1_000, 2_500]

/** Whether the fault leaves Redis empty: the journal is gone. */
export function emptiesRedis(episode: FaultEpisode): boolean {
  return (
    episode.kind === 'redis-restart' ||
    episode.kind === 'redis-outage-kill' ||
    (episode.kind === 'ack-kill' && episode.redisRestartAfter)
  )
}

/**
 * The run's faults and deletions, drawn from `random` alone: one seed, one schedule. Faults come
 * one after another; a profile with `openingKinds` starts with one of those, one with
 * `finaleKinds` ends with one of those. After a fault that empties Redis (so the journal is
 * gone), no other fault comes for `quietAfterRedisLossMs`: what Redis held is in memory until the
 * next snapshot, and a server killed inside that window may lose it whatever the server does (the
 * window a Redis without persistence leaves, not a bug).
 */
export function planSchedule(random: () => number, profile: RunProfile): Schedule {
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1))
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
  // An ack-kill's variant is drawn unless the caller fixes it.
  const draw = (kind: FaultKind, redisRestartAfter = random() < 0.5): FaultEpisode => {
    const restartsRedis = kind === 'ack-kill' && redisRestartAfter
    return {
      kind,
      atMs: 0,
      server: between(0, profile.servers - 1),
      room: between(0, profile.rooms - 1),
      durationMs: durationOf(kind, between, profile, restartsRedis),
      mode: pick<LinkMode>(['cut', 'blackhole', 'slow']),
      slowMs: between(100, 1_500),
      store: pick<Store>(['s3', 'dynamodb', 'both']),
      killAfter: random() < 0.5,
      killDelayMs: between(100, 1_000),
      redisRestartAfter: restartsRedis,
    }
  }
  const finale = profile.finaleKinds.length > 0 ? draw(pick(profile.finaleKinds)) : null
  // The heavy last fault of a short run hits hard: a cut from Redis ends with the server's death.
  if (finale?.kind === 'redis-link') finale.killAfter = true
  // An opening ack-kill is the loss of issue #46: the edit only the killed server's journal
  // stream held, then that stream wiped with Redis.
  const opening = profile.openingKinds.length > 0 ? draw(pick(profile.openingKinds), true) : null
  const end = profile.faultMs - (finale ? finale.durationMs + GAP_MS[0] : 0)
  const episodes: FaultEpisode[] = []
  let at = 1_500
  const nextAfter = (episode: FaultEpisode) =>
    at + episode.durationMs + between(...GAP_MS) + (emptiesRedis(episode) ? profile.quietAfterRedisLossMs : 0)
  if (opening) {
    episodes.push({ ...opening, atMs: at })
    at = nextAfter(opening)
  }
  // Faults are drawn until three in a row do not fit before the last one.
  for (let misfits = 0; profile.kinds.length > 0 && misfits < 3; ) {
    const episode = draw(pick(profile.kinds))
    const next = nextAfter(episode)
    if (next > end + GAP_MS[0]) {
      misfits++
      continue
    }
    misfits = 0
    episodes.push({ ...episode, atMs: at })
    at = next
  }
  if (finale) episodes.push({ ...finale, atMs: at })
  const deletes = Array.from({ length: profile.deletes }, () => ({
    atMs: between(1_000, Math.max(1_000, profile.faultMs - 1_000)),
    room: between(0, profile.rooms - 1),
    server: between(0, profile.servers - 1),
  })).sort((a, b) => a.atMs - b.atMs)
  return { episodes, deletes }
}

/** How long the fault lasts; an ack-kill's counts from the kill. */
function durationOf(
  kind: FaultKind,
  between: (low: number, high: number) => number,
  profile: RunProfile,
  redisRestartAfter: boolean,
): number {
  switch (kind) {
    case 'kill':
      return between(500, 3_000)
    case 'ack-kill':
      // With the Redis restart: past the ~13 s in which the surviving holders must have taken the
      // dead server's journal stream into a snapshot (its writer's lease, 2 × (2 s + 3 s), lapses;
      // their next heartbeat sees it; they read, apply and save).
      return redisRestartAfter ? between(16_000, 19_000) : between(2_000, 4_000)
    case 'stall':
      return between(1_000, 4_000)
    case 'redis-restart':
      return 0
    case 'redis-outage-kill':
      return profile.redisOutageMs
    case 'moto-pause':
      return between(2_000, 6_000)
    case 'crash-all':
      return between(500, 2_000)
    case 'redis-link':
    case 'store-link':
      return between(2_000, 8_000)
    case 'owner-kill':
      return between(500, 3_000)
    case 'owner-stall':
      return leaseOf(profile) + between(1_000, 4_000)
    case 'owner-cut-off':
      return leaseOf(profile) + between(1_000, 5_000)
  }
}

/** The servers' lease in the registry: an owner silent for longer loses its rooms. */
function leaseOf(profile: RunProfile): number {
  return Number(profile.serverEnv.REGISTRY_LEASE_MS ?? DEFAULT_TIMINGS.registryLeaseMs)
}

/** One line per fault, for the report: `12.0 s redis-link blackhole s1 4.2 s, then SIGKILL`. */
export function describeEpisode(episode: FaultEpisode): string {
  const { kind, server, durationMs, mode, slowMs, store, killAfter } = episode
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
  const target = `server ${server}`
  switch (kind) {
    case 'kill':
    case 'stall':
      return `${kind} ${target} for ${seconds(durationMs)}`
    case 'ack-kill':
      return episode.redisRestartAfter
        ? `SIGKILL ${target} at a writer's acknowledgement, redis restart without persistence ${seconds(durationMs)} later, then the server`
        : `SIGKILL ${target} at a writer's acknowledgement, restart it ${seconds(durationMs)} later`
    case 'redis-restart':
      return 'redis restart without persistence'
    case 'redis-outage-kill':
      return `redis down until ${target}'s journal writes fail (at most ${seconds(durationMs)}), SIGKILL it ${episode.killDelayMs} ms later, redis back`
    case 'moto-pause':
      return `moto paused ${seconds(durationMs)}`
    case 'crash-all':
      return `every server SIGKILLed for ${seconds(durationMs)}`
    case 'owner-kill':
    case 'owner-stall':
      return `${kind === 'owner-kill' ? 'SIGKILL' : 'SIGSTOP'} the owner of room ${episode.room} for ${seconds(durationMs)}`
    case 'owner-cut-off':
      return `the owner of room ${episode.room} cut off from redis and dynamodb (blackhole) for ${seconds(durationMs)}`
    case 'redis-link':
    case 'store-link': {
      const link = kind === 'redis-link' ? 'redis' : store === 'both' ? 's3+dynamodb' : store
      const how = mode === 'slow' ? `slow (${slowMs} ms)` : mode
      return `${target} ${link} link ${how} for ${seconds(durationMs)}${killAfter ? ', then SIGKILL' : ''}`
    }
  }
}
