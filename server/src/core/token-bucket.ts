/** One clock for every bucket: a bound function per bucket was a closure per connection, twice. */
const performanceNow = (): number => performance.now()

/** Allows `ratePerSecond` events on average, with bursts of up to `burst`. */
export class TokenBucket {
  #tokens: number
  #updatedAt: number

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number = performanceNow,
  ) {
    this.#tokens = burst
    this.#updatedAt = now()
  }

  /** Takes one token; false when the bucket is empty. */
  take(): boolean {
    const now = this.now()
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#updatedAt) / 1000) * this.ratePerSecond)
    this.#updatedAt = now
    if (this.#tokens < 1) return false
    this.#tokens -= 1
    return true
  }
}
