import { SymphonyError } from '../errors.js'

/** A link that missed its heartbeat: what `/healthz` shows as `heartbeat: HEARTBEAT_MISSED`. */
export class HeartbeatMissedError extends SymphonyError {
  constructor(message: string, options?: ErrorOptions) {
    super('HEARTBEAT_MISSED', message, options)
  }
}

/**
 * Runs `round` every `intervalMs`, one at a time (the next starts `intervalMs` after the last
 * ended), until stopped. A round judges its link itself and never throws.
 */
export class Heartbeat {
  #timer: NodeJS.Timeout | null = null
  #stopped = false

  constructor(
    private readonly intervalMs: number,
    private readonly round: () => Promise<void>,
  ) {
    this.#schedule()
  }

  stop(): void {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.round().finally(() => this.#schedule())
    }, this.intervalMs)
    this.#timer.unref()
  }
}

/**
 * Settles as `work` does if it does within `ms`, else rejects with `HeartbeatMissedError`
 * (what it waited for is ignored from then on).
 */
export function withinDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new HeartbeatMissedError(`${what} took over ${ms} ms`)), ms)
    timer.unref() // a heartbeat never keeps a closed server's process alive
    work.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(new HeartbeatMissedError(`${what} failed`, { cause: error }))
      },
    )
  })
}
