import type { MemoryCharges } from './memory-budget.js'

/**
 * How many of one user's app messages may be handled at once on a server, across its
 * connections and rooms. Fixed, not a setting: a client that waits for its replies never meets
 * it, and with `MAX_APP_MESSAGE_BYTES_HELD` it bounds what a user can make the server hold even
 * when the app's handler never settles, however often the user reconnects.
 */
export const MAX_APP_MESSAGES_RUNNING = 32

/**
 * What one user's app messages being handled may hold at once (each charged what its JSON
 * builds, `VALUE_COST`): one message always runs, however much it holds (it is bounded by
 * `MAX_PRESENCE_BYTES`).
 */
export const MAX_APP_MESSAGE_BYTES_HELD = 512 * 1024

interface Held {
  running: number
  bytes: number
}

/**
 * What the app messages being handled hold, per user (`Connection.holderKey`: the token's
 * subject, or the address of a client without one), charged to the server's memory budget
 * (`app-messages`) until each handler really settles.
 */
export class AppMessageQuota {
  readonly #held = new Map<string, Held>()

  constructor(private readonly memory: MemoryCharges) {}

  /**
   * Takes room for one message of `user`'s holding `bytes`: a function that gives it back (call
   * it once, when the handler settles), or null when the user holds all it may.
   */
  take(user: string, bytes: number): (() => void) | null {
    const held = this.#held.get(user) ?? { running: 0, bytes: 0 }
    const full = held.running >= MAX_APP_MESSAGES_RUNNING || held.bytes + bytes > MAX_APP_MESSAGE_BYTES_HELD
    if (held.running > 0 && full) return null
    held.running++
    held.bytes += bytes
    this.#held.set(user, held)
    this.memory.charge('app-messages', bytes)
    return () => {
      held.running--
      held.bytes -= bytes
      if (held.running === 0) this.#held.delete(user)
      this.memory.charge('app-messages', -bytes)
    }
  }

  /** How many messages `user` has being handled (for tests and metrics). */
  running(user: string): number {
    return this.#held.get(user)?.running ?? 0
  }
}
