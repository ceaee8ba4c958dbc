/**
 * After a dependency failed, it may not be called again for long (a registry with no room held),
 * so its health would stay "failing" after it is back: this asks it now and then, only while it
 * is failing, until it answers.
 */
export class RecoveryProbe {
  #timer: NodeJS.Timeout | null = null

  constructor(
    private readonly intervalMs: number,
    /** One cheap call to the dependency. */
    private readonly ask: () => Promise<unknown>,
    private readonly onAnswer: () => void,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** The dependency failed: probe until it answers (one probe loop at a time). */
  start(): void {
    if (this.#timer) return
    this.#timer = setInterval(() => {
      this.ask().then(
        () => {
          this.stop()
          this.onAnswer()
        },
        (error: unknown) => this.onFailure(error),
      )
    }, this.intervalMs)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }
}
