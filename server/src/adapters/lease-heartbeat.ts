export interface LeaseOptions {
  /** How long a server's lease stays valid without a renewal (the rooms it owns live by it). */
  leaseMs: number
  /** Clock, injectable for tests. */
  now: () => number
}

/**
 * Renews this server's lease a few times per lease period, so one missed renewal never lets a
 * live lease expire. Shared by every `RoomRegistry` adapter. A renewal that finds the lease it
 * last wrote run out (the process stalled, or the registry did not answer, for longer than a
 * lease) tells the lapse listeners: other servers may have taken its rooms meanwhile.
 */
export class LeaseHeartbeat {
  readonly #timer: NodeJS.Timeout
  /** When the lease last written runs out (ms, `options.now`'s clock); null before the first. */
  #expiresAt: number | null = null
  readonly #lapseListeners: (() => void)[] = []

  /** `renew` writes the lease, to run out at the time it is given. */
  constructor(
    private readonly options: LeaseOptions,
    private readonly renew: (expiresAt: number) => Promise<void>,
    onRenewFailed: (error: unknown) => void,
  ) {
    this.#timer = setInterval(() => this.renewNow().catch(onRenewFailed), options.leaseMs / 3)
    this.#timer.unref()
  }

  /** Writes the lease now; a lapse since the last one written is told once this one is. */
  async renewNow(): Promise<void> {
    const expiresAt = this.options.now() + this.options.leaseMs
    await this.renew(expiresAt)
    const lapsed = this.#expiresAt !== null && this.options.now() > this.#expiresAt
    this.#expiresAt = expiresAt
    if (lapsed) for (const listener of this.#lapseListeners) listener()
  }

  onLapsed(listener: () => void): void {
    this.#lapseListeners.push(listener)
  }

  stop(): void {
    clearInterval(this.#timer)
  }
}
