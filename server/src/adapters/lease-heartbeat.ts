export interface LeaseOptions {
  /** How long a server's lease stays valid without a renewal (the rooms it owns live by it). */
  leaseMs: number
  /** Clock, injectable for tests. */
  now: () => number
}

/**
 * Renews this server's lease a few times per lease period, so one missed renewal never lets a
 * live lease expire. Shared by every `RoomRegistry` adapter.
 */
export class LeaseHeartbeat {
  readonly #timer: NodeJS.Timeout

  constructor(options: LeaseOptions, renew: () => Promise<void>, onRenewFailed: (error: unknown) => void) {
    this.#timer = setInterval(() => renew().catch(onRenewFailed), options.leaseMs / 3)
    this.#timer.unref()
  }

  stop(): void {
    clearInterval(this.#timer)
  }
}
