/** Rejected by `within` when the deadline passes first; the operation itself goes on. */
export class DeadlineError extends Error {
  readonly code = 'DEADLINE'
}

/**
 * `operation`'s outcome if it settles within `ms`, else a `DeadlineError`. For calls on a room's
 * life path whose failure is tolerated anyway (the registry): a hung link must not hold a load,
 * an unload or a deletion for the SDK's whole retry budget.
 */
export function within<T>(operation: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([operation, deadline]).finally(() => clearTimeout(timer))
}

/**
 * `within` for a call into code that is not ours (an app's hook): a synchronous throw becomes a
 * rejection like an asynchronous one, so one `catch` sees both.
 */
export function callWithin<T>(call: () => T | Promise<T>, ms: number, what: string): Promise<T> {
  return within(Promise.resolve().then(call), ms, what)
}
