import type { Logger } from './logger.js'

export interface ThrottledLogOptions {
  logger: Logger
  level: 'warn' | 'error'
  message: string
  /** At most one line per this many milliseconds (the first of a burst goes out at once). */
  intervalMs: number
}

/**
 * One log line that may repeat thousands of times a second (every failed delivery while a
 * receiver is down): the first goes out at once, the rest of each interval are counted, and one
 * line at the interval's end carries the latest fields and `suppressed`, how many were left out.
 * A flood of failures costs one line per interval, and no failure goes uncounted.
 */
export class ThrottledLog {
  readonly #options: ThrottledLogOptions
  #timer: NodeJS.Timeout | null = null
  #suppressed = 0
  #latest: object = {}

  constructor(options: ThrottledLogOptions) {
    this.#options = options
  }

  log(fields: object): void {
    if (this.#timer) {
      this.#suppressed++
      this.#latest = fields
      return
    }
    this.#write(fields)
    this.#startInterval()
  }

  /** Writes what is still counted, now (at shutdown). */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#writeSuppressed()
  }

  #startInterval(): void {
    this.#timer = setTimeout(() => {
      this.#timer = null
      // Something was left out: this line is the interval's one, and a new interval starts.
      if (this.#writeSuppressed()) this.#startInterval()
    }, this.#options.intervalMs)
    this.#timer.unref()
  }

  #writeSuppressed(): boolean {
    if (this.#suppressed === 0) return false
    this.#write({ ...this.#latest, suppressed: this.#suppressed })
    this.#suppressed = 0
    return true
  }

  #write(fields: object): void {
    const { logger, level, message } = this.#options
    logger[level](fields, message)
  }
}
