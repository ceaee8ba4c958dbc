/** Samples kept: at high rates the window is the latest this many updates, not the full 60 s. */
const CAPACITY = 16_384
/** How far back the percentile looks. */
export const WINDOW_MS = 60_000

/**
 * Durations of the last minute, for a percentile CloudWatch can alarm on (it cannot derive one
 * from a Prometheus histogram). Recording writes two numbers into preallocated arrays; the
 * percentile is computed only when asked (at scrape time).
 */
export class LatencyWindow {
  readonly #at = new Float64Array(CAPACITY).fill(Number.NEGATIVE_INFINITY)
  readonly #seconds = new Float64Array(CAPACITY)
  readonly #scratch = new Float64Array(CAPACITY)
  #next = 0

  /** `now`: `performance.now()` when the duration ended. */
  record(seconds: number, now: number): void {
    this.#at[this.#next] = now
    this.#seconds[this.#next] = seconds
    this.#next = (this.#next + 1) % CAPACITY
  }

  /** The `q` quantile (0..1) of the durations recorded in the last `WINDOW_MS`; 0 when none were. */
  quantile(q: number, now = performance.now()): number {
    const from = now - WINDOW_MS
    let count = 0
    for (let i = 0; i < CAPACITY; i++) {
      if ((this.#at[i] as number) >= from) this.#scratch[count++] = this.#seconds[i] as number
    }
    if (count === 0) return 0
    const recent = this.#scratch.subarray(0, count).sort()
    return recent[Math.min(count - 1, Math.ceil(q * count) - 1)] as number
  }
}
