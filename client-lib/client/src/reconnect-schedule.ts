/**
 * How long to wait between connection attempts.
 *
 * @example
 * createClient({ url, reconnect: { baseDelayMs: 1_000, maxDelayMs: 60_000 } })
 */
export interface ReconnectOptions {
  /** The ceiling of the first wait, in milliseconds; each failed attempt doubles it. Default 500. */
  baseDelayMs?: number
  /** The largest ceiling, in milliseconds. Default 30 000. */
  maxDelayMs?: number
}

/**
 * Exponential backoff with full jitter: the n-th wait is uniformly random in
 * [0, min(maxDelayMs, baseDelayMs · 2ⁿ)). Random waits spread a crowd of clients that lost the
 * same server, so they do not all knock on the next one in the same instant.
 *
 * @example
 * const schedule = new ReconnectSchedule({ baseDelayMs: 500, maxDelayMs: 30_000 })
 * setTimeout(connect, schedule.nextDelay()) // after a failure
 * schedule.reset() // once a connection synced
 */
export class ReconnectSchedule {
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  #failures = 0

  constructor(
    options: ReconnectOptions = {},
    private readonly random: () => number = Math.random,
  ) {
    this.baseDelayMs = options.baseDelayMs ?? 500
    this.maxDelayMs = options.maxDelayMs ?? 30_000
    if (!(this.baseDelayMs > 0) || !(this.maxDelayMs >= this.baseDelayMs)) {
      throw new RangeError('reconnect delays need 0 < baseDelayMs <= maxDelayMs')
    }
  }

  /** Failed attempts since the last reset. */
  get failures(): number {
    return this.#failures
  }

  /** The wait before the next attempt; counts one more failure. */
  nextDelay(): number {
    const ceiling = this.ceiling()
    this.#failures++
    return Math.floor(this.random() * ceiling)
  }

  /** The upper bound of the next wait. */
  ceiling(): number {
    // Capping the exponent keeps 2ⁿ finite however long a client stays offline.
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(this.#failures, 30))
  }

  /** Back to short waits, after a connection that worked. */
  reset(): void {
    this.#failures = 0
  }
}
