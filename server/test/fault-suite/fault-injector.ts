import type { FaultCluster } from './fault-cluster.js'
import type { Acknowledgement, Ledger } from './ledger.js'
import {
  describeEpisode,
  emptiesRedis,
  type FaultEpisode,
  type LinkMode,
  type PlannedDelete,
  type Schedule,
} from './schedule.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

/**
 * Resolves once `performance.now()` has reached `at`: a timer counts whole milliseconds of the
 * event loop's clock and may fire up to one before (a planned 1 s gap was once 999.6 ms).
 */
async function sleepUntil(at: number): Promise<void> {
  while (performance.now() < at) await sleep(Math.ceil(at - performance.now()))
}

/** How long a deletion may take; one that takes longer counts as unanswered (it may still happen). */
const DELETE_TIMEOUT_MS = 15_000
/** How long a deletion waits for a server that is up and not stopped. */
const DELETE_WAIT_MS = 15_000
/** How long a fault that empties Redis waits for every room to be held again (then it comes anyway). */
const ROOMS_HELD_WAIT_MS = 30_000
/** How long an ack-kill waits for a prompt acknowledgement from its server (then it kills anyway). */
const ACK_WAIT_MS = 5_000
/**
 * An answer that came this soon after its newest edit was sent came from the journal's
 * confirmation, not from a saved snapshot (a save takes longer): the edit is in the journal alone.
 */
const PROMPT_ANSWER_MS = 20

export interface FaultInjectorOptions {
  cluster: FaultCluster
  /** Where the deletions are recorded, and whose acknowledgements time the ack-kills. */
  ledger: Ledger
  rooms: string[]
  /** How long after Redis lost its data no server is killed. */
  quietAfterRedisLossMs: number
}

/**
 * Plays a schedule on a cluster: each fault in turn, healed at its end, and the deletions on a
 * timeline of their own. What goes wrong while healing (a server that fails to start) is kept and
 * retried by `heal`.
 */
export class FaultInjector {
  readonly problems: string[] = []
  /** What was done when (ms after the schedule's time zero), as played. */
  readonly played: [number, string][] = []
  #zero = 0
  #deletions: Promise<void> = Promise.resolve()
  #redisDown = false
  #motoPaused = false
  /** The rooms an ack-kill's acknowledgement may come from (see `play`). */
  #ackKillRooms = new Set<string>()

  readonly #cluster: FaultCluster
  readonly #ledger: Ledger
  readonly #rooms: string[]
  readonly #quietAfterRedisLossMs: number

  constructor(options: FaultInjectorOptions) {
    this.#cluster = options.cluster
    this.#ledger = options.ledger
    this.#rooms = options.rooms
    this.#quietAfterRedisLossMs = options.quietAfterRedisLossMs
  }

  /**
   * Plays `schedule` with `startedAt` (performance.now()) as its time zero; resolves after the last
   * fault. The deletions go on: `deletions()` resolves once they are all answered or given up.
   */
  async play(schedule: Schedule, startedAt: number): Promise<void> {
    this.#zero = startedAt
    // An ack-kill times itself by an edit of a room no deletion touches: a deletion sent after an
    // edit's acknowledgement excuses its absence.
    const deleted = new Set(schedule.deletes.map((planned) => this.#rooms[planned.room]))
    const undeleted = this.#rooms.filter((room) => !deleted.has(room))
    this.#ackKillRooms = new Set(undeleted.length > 0 ? undeleted : this.#rooms)
    this.#deletions = Promise.all(schedule.deletes.map((planned) => this.#delete(planned, startedAt))).then(
      () => {},
    )
    // The planned gap after a fault counts from when it really ended: on a slow machine a crash-all's
    // restart overruns its plan, and a Redis wipe right after it would hit rooms no server has
    // reloaded and saved yet (a double fault docs/durability.md allows, and the gaps exclude).
    let notBefore = startedAt
    for (const [index, episode] of schedule.episodes.entries()) {
      await sleepUntil(Math.max(startedAt + episode.atMs, notBefore))
      if (emptiesRedis(episode)) await this.#untilEveryRoomHeld()
      this.#note(describeEpisode(episode))
      await this.#play(episode).catch((error: unknown) => {
        this.problems.push(`${episode.kind}: ${(error as Error).message}`)
      })
      this.#note(`${episode.kind} over`)
      const next = schedule.episodes[index + 1]
      if (next) notBefore = performance.now() + (next.atMs - (episode.atMs + episode.durationMs))
    }
  }

  deletions(): Promise<void> {
    return this.#deletions
  }

  /** Brings everything back: Redis and moto up, links open, every server running and not stopped. */
  async heal(): Promise<void> {
    if (this.#motoPaused) this.#signalMoto('SIGCONT')
    if (this.#redisDown) {
      await this.#cluster.redis.start()
      this.#redisDown = false
    }
    for (let server = 0; server < this.#cluster.size; server++) {
      for (const link of Object.values(this.#cluster.links(server))) link.restore()
      this.#cluster.resume(server)
    }
    await Promise.all(
      Array.from({ length: this.#cluster.size }, async (_, server) => {
        if (!this.#cluster.isRunning(server)) await this.#cluster.startServer(server)
      }),
    )
  }

  async #play(episode: FaultEpisode): Promise<void> {
    const cluster = this.#cluster
    const { server, durationMs } = episode
    switch (episode.kind) {
      case 'owner-kill': {
        const owner = await this.#ownerOf(episode)
        await cluster.kill(owner)
        await sleep(durationMs)
        return cluster.startServer(owner)
      }
      case 'owner-stall': {
        const owner = await this.#ownerOf(episode)
        cluster.pause(owner)
        await sleep(durationMs)
        return cluster.resume(owner)
      }
      case 'owner-cut-off': {
        const owner = await this.#ownerOf(episode)
        const { redis, dynamodb } = cluster.links(owner)
        for (const link of [redis, dynamodb]) apply(link, 'blackhole', 0)
        await sleep(durationMs)
        for (const link of [redis, dynamodb]) link.restore()
        return
      }
      case 'kill':
        await cluster.kill(server)
        await sleep(durationMs)
        return cluster.startServer(server)
      case 'ack-kill':
        await this.#killAtAcknowledgement(server)
        await sleep(durationMs)
        if (episode.redisRestartAfter) {
          await cluster.redis.restart()
          this.#note('redis restarted without persistence')
        }
        return cluster.startServer(server)
      case 'stall':
        cluster.pause(server)
        await sleep(durationMs)
        return cluster.resume(server)
      case 'redis-restart':
        return cluster.redis.restart()
      case 'redis-outage-kill': {
        this.#redisDown = true
        const failures = await cluster.journalFailures(server)
        await cluster.redis.stop()
        const stoppedAt = performance.now()
        // The server dies once its Redis client has given up on a journal write, before Redis is back.
        const deadline = stoppedAt + 2 * durationMs
        while (performance.now() < deadline && (await cluster.journalFailures(server)) <= failures)
          await sleep(200)
        this.#note(`server ${server}'s journal writes fail`)
        await sleep(episode.killDelayMs)
        // Redis lost what it held when it stopped: what was journaled just before is safe only once
        // a snapshot holds it, so the server does not die inside that window (see planSchedule).
        await sleepUntil(stoppedAt + this.#quietAfterRedisLossMs)
        await cluster.kill(server)
        this.#note(`server ${server} killed`)
        await cluster.redis.start()
        this.#redisDown = false
        return cluster.startServer(server)
      }
      case 'moto-pause':
        this.#signalMoto('SIGSTOP')
        await sleep(durationMs)
        return this.#signalMoto('SIGCONT')
      case 'crash-all': {
        const all = Array.from({ length: cluster.size }, (_, i) => i)
        await Promise.all(all.map((i) => cluster.kill(i)))
        await sleep(durationMs)
        await Promise.all(all.map((i) => cluster.startServer(i)))
        return
      }
      case 'redis-link':
      case 'store-link': {
        const links = cluster.links(server)
        const affected =
          episode.kind === 'redis-link'
            ? [links.redis]
            : episode.store === 'both'
              ? [links.s3, links.dynamodb]
              : [links[episode.store]]
        for (const link of affected) apply(link, episode.mode, episode.slowMs)
        await sleep(durationMs)
        if (episode.killAfter) await cluster.kill(server)
        for (const link of affected) link.restore()
        if (episode.killAfter) await cluster.startServer(server)
        return
      }
    }
  }

  /**
   * The server holding the episode's room now (its owner: only the owner holds a copy), else the
   * episode's own server when none does (the room unloaded between sessions).
   */
  async #ownerOf(episode: FaultEpisode): Promise<number> {
    const room = this.#rooms[episode.room] ?? ''
    for (let server = 0; server < this.#cluster.size; server++) {
      if (!this.#cluster.isRunning(server)) continue
      if (await this.#cluster.heldState(server, room).catch(() => null)) {
        this.#note(`room ${episode.room}'s owner is server ${server}`)
        return server
      }
    }
    this.#note(`room ${episode.room} is held nowhere: server ${episode.server} instead`)
    return episode.server
  }

  /**
   * SIGKILLs `server` in the handler where one of its writers receives a prompt sync-status answer
   * (PROMPT_ANSWER_MS) in a room no deletion touches. The server answers once Redis confirmed the
   * journal append: killed at once, it dies with the acknowledged edit in the room's journal
   * stream alone, which the next owner must replay (issue #46). Killed anyway after ACK_WAIT_MS.
   */
  async #killAtAcknowledgement(server: number): Promise<void> {
    const url = this.#cluster.url(server)
    let passedOver = 0
    const { acknowledgement, exited } = await new Promise<{
      acknowledgement: Acknowledgement | null
      exited: Promise<void>
    }>((resolve) => {
      const kill = (acknowledgement: Acknowledgement | null) => {
        // First, before anything else runs: kill() sends SIGKILL before its first await.
        const exited = this.#cluster.kill(server)
        clearTimeout(timer)
        stopListening()
        resolve({ acknowledgement, exited })
      }
      const timer = setTimeout(() => kill(null), ACK_WAIT_MS)
      const stopListening = this.#ledger.onAcknowledgement((acknowledgement) => {
        if (acknowledgement.url !== url) return
        const prompt = acknowledgement.at - acknowledgement.newestSentAt < PROMPT_ANSWER_MS
        if (prompt && this.#ackKillRooms.has(acknowledgement.room)) kill(acknowledgement)
        else passedOver++
      })
    })
    const others = `${passedOver} answers passed over: slow, or in a room to be deleted`
    if (acknowledgement) {
      const { ids, at, newestSentAt } = acknowledgement
      const answeredMs = (at - newestSentAt).toFixed(0)
      this.#note(
        `server ${server} SIGKILLed at the acknowledgement of ${ids.join(', ')} (answered ${answeredMs} ms after the newest was sent; ${others})`,
        at,
      )
    } else {
      this.#note(
        `no prompt acknowledgement from server ${server} in ${ACK_WAIT_MS} ms (${others}): SIGKILLed anyway`,
      )
    }
    await exited
  }

  /**
   * Edits acknowledged on the journal alone are safe from a Redis wipe only once a live server holds
   * their room (it replayed them and will save them). After a crash its rooms come back as their
   * clients reconnect, which a loaded machine slows past any fixed gap: wait for it. A room has one
   * owner, which replays the whole journal as it loads the room (issue #48).
   */
  async #untilEveryRoomHeld(): Promise<void> {
    const deadline = performance.now() + ROOMS_HELD_WAIT_MS
    let waiting = this.#rooms
    while (performance.now() < deadline) {
      const held = await Promise.all(waiting.map((room) => this.#isHeld(room)))
      waiting = waiting.filter((_, i) => !held[i])
      if (waiting.length === 0) return
      await sleep(100)
    }
    this.#note(`rooms still not held after ${ROOMS_HELD_WAIT_MS} ms: ${waiting.join(', ')}`)
  }

  /** Whether a server up and not stopped holds `room`. */
  async #isHeld(room: string): Promise<boolean> {
    for (let server = 0; server < this.#cluster.size; server++) {
      if (!this.#cluster.isRunning(server) || this.#cluster.isPaused(server)) continue
      if (await this.#cluster.heldState(server, room).catch(() => null)) return true
    }
    return false
  }

  async #delete(planned: PlannedDelete, startedAt: number): Promise<void> {
    await sleepUntil(startedAt + planned.atMs)
    const room = this.#rooms[planned.room] ?? ''
    const server = await this.#deleter(planned.server)
    if (server === null) {
      this.problems.push(`delete of room ${planned.room}: no server up for ${DELETE_WAIT_MS} ms`)
      return
    }
    const at = performance.now()
    const outcome = await this.#cluster.deleteRoom(server, room, DELETE_TIMEOUT_MS).then(
      (status) => ({ ok: status >= 200 && status < 300, outcome: String(status) }),
      (error: unknown) => ({ ok: false, outcome: (error as Error).name }),
    )
    const endedAt = outcome.outcome === 'TimeoutError' ? Number.POSITIVE_INFINITY : performance.now()
    this.#ledger.deleted({ room, startedAt: at, endedAt, ...outcome })
    this.#note(
      `DELETE room ${planned.room} through server ${server} (sent at ${this.#since(at)}): ${outcome.outcome}`,
    )
  }

  /** The planned server if it is up and not stopped, else the next one that is (waiting for one). */
  async #deleter(planned: number): Promise<number | null> {
    const deadline = performance.now() + DELETE_WAIT_MS
    while (performance.now() < deadline) {
      for (let n = 0; n < this.#cluster.size; n++) {
        const server = (planned + n) % this.#cluster.size
        if (this.#cluster.isRunning(server) && !this.#cluster.isPaused(server)) return server
      }
      await sleep(100)
    }
    return null
  }

  #note(text: string, at = performance.now()): void {
    this.played.push([at - this.#zero, text])
  }

  #since(at: number): string {
    return `${((at - this.#zero) / 1000).toFixed(1)} s`
  }

  #signalMoto(signal: 'SIGSTOP' | 'SIGCONT'): void {
    process.kill(this.#cluster.moto.pid, signal)
    this.#motoPaused = signal === 'SIGSTOP'
  }
}

function apply(
  link: { cut(): void; blackhole(): void; slow(ms: number): void },
  mode: LinkMode,
  slowMs: number,
) {
  if (mode === 'cut') link.cut()
  else if (mode === 'blackhole') link.blackhole()
  else link.slow(slowMs)
}
