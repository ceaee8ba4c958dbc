/**
 * Steps run one at a time, in the order posted, each once every step before it has settled
 * (resolved or rejected). The one hand-written chain of promises: a room's mailbox
 * (`core/room-mailbox.ts`), a room's snapshot writes, the server's document reads.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve()
  #posted = 0

  /** Steps posted and not settled yet, the one running included. */
  get posted(): number {
    return this.#posted
  }

  /** Runs `step` once every step posted before it has settled; resolves or rejects as it does. */
  post<T>(step: () => T | Promise<T>): Promise<T> {
    this.#posted++
    const run = this.#tail.then(step).finally(() => {
      this.#posted--
    })
    this.#tail = run.catch(() => {})
    return run
  }

  /** Resolves once every step posted so far has settled. */
  async settled(): Promise<void> {
    await this.#tail
  }
}
