import type { Logger } from '../logger.js'

/** How many rooms' incarnations are read from the snapshot store at once. */
export const CHECKS_AT_ONCE = 8
/** A pass gives up after this many failed reads in a row (the store is down): the rest wait for the retry. */
export const FAILURES_BEFORE_GIVING_UP = 8

/** A room held here, and which incarnation of it. */
export interface HeldIncarnation {
  name: string
  generation: number
}

export interface MissedDeletionDeps {
  /** The room's current incarnation, as the snapshot store says (a tombstone moves it on). */
  storedGeneration(name: string): Promise<number>
  /** Incarnation `generation` of the room was deleted: drop it, if it is still held. */
  drop(name: string, generation: number): void
  logger: Logger
}

/**
 * One pass: drops each room whose incarnation the store has moved past (deleted elsewhere while
 * this server heard nothing), reading `CHECKS_AT_ONCE` at a time. Never rejects; resolves to the
 * rooms dropped and those the store did not answer for (all the rest, once it failed
 * `FAILURES_BEFORE_GIVING_UP` times in a row).
 */
export async function dropMissedDeletions(
  held: HeldIncarnation[],
  { storedGeneration, drop, logger }: MissedDeletionDeps,
): Promise<{ dropped: string[]; unanswered: HeldIncarnation[] }> {
  const dropped: string[] = []
  const unanswered: HeldIncarnation[] = []
  const queue = [...held]
  let failuresInARow = 0
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      if (failuresInARow >= FAILURES_BEFORE_GIVING_UP) {
        unanswered.push(next, ...queue.splice(0))
        return
      }
      let deleted: boolean
      try {
        deleted = (await storedGeneration(next.name)) > next.generation
        failuresInARow = 0
      } catch {
        failuresInARow++
        unanswered.push(next)
        continue
      }
      if (!deleted) continue
      logger.warn(
        { room: next.name, generation: next.generation },
        'the room was deleted while this server missed pub/sub messages; dropping it',
      )
      try {
        drop(next.name, next.generation)
        dropped.push(next.name)
      } catch (error) {
        logger.error({ err: error, room: next.name }, 'could not drop a room deleted elsewhere')
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, queue.length) }, worker))
  return { dropped, unanswered }
}

export interface MissedDeletionChecksOptions extends MissedDeletionDeps {
  /** Whether incarnation `generation` of the room is still held here (else it needs no check). */
  isHeld(name: string, generation: number): boolean
  /** The first retry of the rooms the store did not answer for, doubling up to `retryMaxMs`. */
  retryBaseMs?: number
  retryMaxMs?: number
}

/**
 * After pub/sub may have missed messages, every held room is checked for a deletion it was not
 * told of: an idle room would otherwise serve its deleted content for as long as it is held, as
 * only a save meets the tombstone. One pass runs at a time (rooms asked for meanwhile wait for
 * the next); the rooms the store did not answer for are checked again, with backoff, until it
 * does or they are no longer held.
 */
export class MissedDeletionChecks {
  readonly #queued = new Map<string, number>()
  readonly #toRetry = new Map<string, number>()
  #running = false
  #stopped = false
  #retryTimer: NodeJS.Timeout | null = null
  #retryMs: number
  readonly #options: MissedDeletionChecksOptions

  constructor(options: MissedDeletionChecksOptions) {
    this.#options = options
    this.#retryMs = this.#baseMs
  }

  /** Checks these rooms (after the pass running now, if any). */
  check(rooms: Iterable<HeldIncarnation>): void {
    if (this.#stopped) return
    for (const { name, generation } of rooms) this.#queued.set(name, generation)
    void this.#run()
  }

  /** No pass starts or is retried from now on (the one running finishes its reads). */
  stop(): void {
    this.#stopped = true
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = null
    this.#queued.clear()
    this.#toRetry.clear()
  }

  get #baseMs(): number {
    return this.#options.retryBaseMs ?? 1_000
  }

  async #run(): Promise<void> {
    if (this.#running) return
    this.#running = true
    try {
      while (this.#queued.size > 0 && !this.#stopped) {
        const held = [...this.#queued]
          .map(([name, generation]) => ({ name, generation }))
          .filter(({ name, generation }) => this.#options.isHeld(name, generation))
        this.#queued.clear()
        const { unanswered } = await dropMissedDeletions(held, this.#options)
        if (unanswered.length > 0) this.#retryLater(unanswered)
        else if (this.#toRetry.size === 0 && !this.#retryTimer) this.#retryMs = this.#baseMs
      }
    } finally {
      this.#running = false
    }
  }

  #retryLater(rooms: HeldIncarnation[]): void {
    if (this.#stopped) return
    this.#options.logger.warn(
      { rooms: rooms.length, retryInMs: this.#retryMs },
      'could not check some rooms for a deletion pub/sub missed; checking them again later',
    )
    for (const { name, generation } of rooms) this.#toRetry.set(name, generation)
    if (this.#retryTimer) return
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null
      this.#retryMs = Math.min(this.#options.retryMaxMs ?? 60_000, this.#retryMs * 2)
      const retry = [...this.#toRetry].map(([name, generation]) => ({ name, generation }))
      this.#toRetry.clear()
      this.check(retry)
    }, this.#retryMs)
    this.#retryTimer.unref()
  }
}
