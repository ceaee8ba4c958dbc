/**
 * After a dependency failed, it may not be called again for long (a registry with no room held),
 * so its health would stay "failing" after it is back: this asks it now and then, only while it
 * is failing, until it answers.
 */
export class RecoveryProbe {
  #timer: NodeJS.Timeout | null = null
  /** Bumped by start and stop: an answer to an older round is ignored (a slow probe outlived it). */
  #round = 0

  constructor(
    private readonly intervalMs: number,
    /** One cheap call to the dependency. */
    private readonly ask: () => Promise<unknown>,
    private readonly onAnswer: () => void,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** The dependency failed: probe until it answers, one probe at a time, `intervalMs` after the last. */
  start(): void {
    if (this.#timer) return
    const round = ++this.#round
    const next = () => {
      this.#timer = setTimeout(() => {
        this.ask().then(
          () => {
            if (round !== this.#round) return
            this.stop()
            this.onAnswer()
          },
          (error: unknown) => {
            if (round !== this.#round) return
            this.onFailure(error)
            next()
          },
        )
      }, this.intervalMs)
      this.#timer.unref()
    }
    next()
  }

  stop(): void {
    this.#round++
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
