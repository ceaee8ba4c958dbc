/**
 * Callers waiting for one outcome that may be long in coming (a room's load retried through an
 * outage), each free to stop waiting. One that stops is removed at once: nothing of it stays
 * behind, however many come and go before the outcome (a `.then` per caller on a long-lived
 * promise would instead stay until that promise settles).
 */
export class Waiters<T> {
  readonly #pending = new Set<{ resolve: (value: T) => void; reject: (error: unknown) => void }>()

  /** How many wait now. */
  get size(): number {
    return this.#pending.size
  }

  /** The next outcome, or `signal`'s reason once it aborts first (the wait is then forgotten). */
  wait(signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.#pending.delete(waiter)
        reject(signal?.reason)
      }
      const done = () => signal?.removeEventListener('abort', onAbort)
      const waiter = {
        resolve: (value: T) => {
          done()
          resolve(value)
        },
        reject: (error: unknown) => {
          done()
          reject(error)
        },
      }
      this.#pending.add(waiter)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Settles every current wait with `value`; later waits wait for the next outcome. */
  resolveAll(value: T): void {
    for (const waiter of this.#take()) waiter.resolve(value)
  }

  /** Rejects every current wait with `error`; later waits wait for the next outcome. */
  rejectAll(error: unknown): void {
    for (const waiter of this.#take()) waiter.reject(error)
  }

  #take() {
    const waiters = [...this.#pending]
    this.#pending.clear()
    return waiters
  }
}
