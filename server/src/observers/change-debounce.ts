/** When a debounced call runs: after `debounceMs` of quiet, and at most `maxWaitMs` after the first change. */
export interface DebounceTiming {
  debounceMs: number
  maxWaitMs: number
}

/**
 * Debounces one call per key (a room): `touch` schedules it, `flush` runs what is pending now.
 * Calls of one key never overlap: one due while the previous runs waits for it. A call's failure
 * goes to `failed`, never further.
 */
export class ChangeDebounce<Pending> {
  readonly #pending = new Map<string, { value: Pending; firstAt: number; timer: NodeJS.Timeout }>()
  /** Each key's latest call, while it runs. */
  readonly #running = new Map<string, Promise<void>>()

  constructor(
    private readonly timing: DebounceTiming,
    private readonly run: (key: string, value: Pending) => unknown,
    private readonly failed: (error: unknown, key: string) => void,
  ) {}

  /** Records a change of `key`: `merge` folds it into what is pending (undefined: nothing yet). */
  touch(key: string, merge: (pending: Pending | undefined) => Pending): void {
    const now = Date.now()
    const before = this.#pending.get(key)
    if (before) clearTimeout(before.timer)
    const firstAt = before?.firstAt ?? now
    const delay = Math.max(0, Math.min(this.timing.debounceMs, firstAt + this.timing.maxWaitMs - now))
    const timer = setTimeout(() => this.flush(key), delay)
    timer.unref()
    this.#pending.set(key, { value: merge(before?.value), firstAt, timer })
  }

  /** Runs what is pending for `key` now (after its running call, if any). */
  flush(key: string): void {
    const pending = this.#pending.get(key)
    if (!pending) return
    clearTimeout(pending.timer)
    this.#pending.delete(key)
    const previous = this.#running.get(key) ?? Promise.resolve()
    const call = previous
      .then(async () => {
        await this.run(key, pending.value)
      })
      .catch((error: unknown) => this.failed(error, key))
      .finally(() => {
        if (this.#running.get(key) === call) this.#running.delete(key)
      })
    this.#running.set(key, call)
  }

  /** Runs everything pending now; resolves once every call has settled. */
  async settle(): Promise<void> {
    for (const key of [...this.#pending.keys()]) this.flush(key)
    await Promise.all(this.#running.values())
  }
}
