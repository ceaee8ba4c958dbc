import type { Logger } from '../logger.js'

/** How many rooms a pass visits at once. */
export const VISITS_AT_ONCE = 8
/** A pass gives up after this many failed visits in a row (the store is down): the rest wait for the retry. */
export const FAILURES_BEFORE_GIVING_UP = 8

/** A room held here, and which incarnation of it. */
export interface HeldIncarnation {
  name: string
  generation: number
}

/**
 * One pass: `visit`s each room, `VISITS_AT_ONCE` at a time. Never rejects; resolves to the rooms
 * whose visit failed (all the rest, once `FAILURES_BEFORE_GIVING_UP` failed in a row).
 */
export async function visitRooms(
  held: HeldIncarnation[],
  visit: (room: HeldIncarnation) => Promise<void>,
): Promise<HeldIncarnation[]> {
  const failed: HeldIncarnation[] = []
  const queue = [...held]
  let failuresInARow = 0
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      if (failuresInARow >= FAILURES_BEFORE_GIVING_UP) {
        failed.push(next, ...queue.splice(0))
        return
      }
      try {
        await visit(next)
        failuresInARow = 0
      } catch {
        failuresInARow++
        failed.push(next)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(VISITS_AT_ONCE, queue.length) }, worker))
  return failed
}

export interface HeldRoomSweepOptions {
  /** What the sweep does to one held room; rejects when what it reads did not answer (visited again later). */
  visit(room: HeldIncarnation): Promise<void>
  /** Whether incarnation `generation` of the room is still held here (else it needs no visit). */
  isHeld(name: string, generation: number): boolean
  /** What a visit looks for, in the log line of rooms visited again later. */
  lookingFor: string
  logger: Logger
  /** The first retry of the rooms whose visit failed, doubling up to `retryMaxMs`. */
  retryBaseMs?: number
  retryMaxMs?: number
}

/**
 * Visits held rooms when something may have happened to them unseen (a deletion pub/sub missed, a
 * server gone with journal entries only it had told of). One pass runs at a time (rooms asked for
 * meanwhile wait for the next); the rooms whose visit failed are visited again, with backoff,
 * until it succeeds or they are no longer held.
 */
export class HeldRoomSweep {
  readonly #queued = new Map<string, number>()
  readonly #toRetry = new Map<string, number>()
  #running = false
  #stopped = false
  #retryTimer: NodeJS.Timeout | null = null
  #retryMs: number
  readonly #options: HeldRoomSweepOptions

  constructor(options: HeldRoomSweepOptions) {
    this.#options = options
    this.#retryMs = this.#baseMs
  }

  /** Visits these rooms (after the pass running now, if any). */
  check(rooms: Iterable<HeldIncarnation>): void {
    if (this.#stopped) return
    for (const { name, generation } of rooms) this.#queued.set(name, generation)
    void this.#run()
  }

  /** No pass starts or is retried from now on (the one running finishes its visits). */
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
        const failed = await visitRooms(held, this.#options.visit)
        if (failed.length > 0) this.#retryLater(failed)
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
      `could not check some rooms for ${this.#options.lookingFor}; checking them again later`,
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
