import type { LeaseLapse } from '../ports/room-registry.js'

export interface LeaseOptions {
  /** How long a server's lease stays valid without a renewal (the rooms it owns live by it). */
  leaseMs: number
  /** Clock, injectable for tests. */
  now: () => number
}

/**
 * Renews this server's lease a few times per lease period, so one missed renewal never lets a
 * live lease expire. Shared by every `RoomRegistry` adapter. Tells the lapse listeners when the
 * lease runs out unrenewed, and when a renewal lands after that.
 */
export class LeaseHeartbeat {
  readonly #timer: NodeJS.Timeout
  /** Fires when the lease last written runs out, unless a renewal lands first. */
  #runOutTimer: NodeJS.Timeout | undefined
  /** When the lease last written runs out (ms, `options.now`'s clock); null before the first. */
  #expiresAt: number | null = null
  #toldRunOut = false
  readonly #lapseListeners: ((lapse: LeaseLapse) => void)[] = []

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
    try {
      await this.renew(expiresAt)
    } catch (error) {
      this.checkRunOut()
      throw error
    }
    const lapsed = this.#expiresAt !== null && this.options.now() > this.#expiresAt
    this.#expiresAt = expiresAt
    this.#toldRunOut = false
    clearTimeout(this.#runOutTimer)
    this.#runOutTimer = setTimeout(() => this.checkRunOut(), expiresAt - this.options.now() + 1)
    this.#runOutTimer.unref()
    if (lapsed) this.#tell('renewed')
  }

  /** Tells `run-out` once if the lease last written has run out unrenewed (its timer calls it). */
  checkRunOut(): void {
    if (this.#toldRunOut || this.#expiresAt === null || this.options.now() <= this.#expiresAt) return
    this.#toldRunOut = true
    this.#tell('run-out')
  }

  onLapsed(listener: (lapse: LeaseLapse) => void): void {
    this.#lapseListeners.push(listener)
  }

  stop(): void {
    clearInterval(this.#timer)
    clearTimeout(this.#runOutTimer)
  }

  #tell(lapse: LeaseLapse): void {
    for (const listener of this.#lapseListeners) listener(lapse)
  }
}
