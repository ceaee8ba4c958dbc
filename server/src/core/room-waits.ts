// What the waits for a room report: each client's wait to join it, and each call its load waits on.

/** How a client's wait for its room ended. */
export type JoinWaitOutcome = 'joined' | 'expired' | 'left' | 'refused'

/** Told of each client's wait for its room (`symphony_join_waiting`, `symphony_join_wait_seconds`). */
export interface JoinWaitObserver {
  started(): void
  ended(outcome: JoinWaitOutcome, seconds: number): void
}

/** What a room's load waits on, as labelled in `symphony_room_load_wait_seconds`. */
export type LoadDependency = 'registry' | 'snapshots' | 'journal'

/** Told how long one call of a room's load waited on a dependency (whether it succeeded or not). */
export type LoadWaitObserver = (dependency: LoadDependency, seconds: number) => void

/** `operation()`, its wait reported to `observe` once it settles. */
export async function timedWait<T>(
  observe: LoadWaitObserver | undefined,
  dependency: LoadDependency,
  operation: () => Promise<T>,
): Promise<T> {
  const started = performance.now()
  try {
    return await operation()
  } finally {
    observe?.(dependency, (performance.now() - started) / 1000)
  }
}
