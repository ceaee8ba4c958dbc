export interface LeaseOptions {
  /** How long a registration stays valid without a refresh. */
  leaseMs: number
  /** Clock, injectable for tests. */
  now: () => number
}

/**
 * Refreshes this server's leases (its own and its rooms') a few times per lease period, so one
 * missed refresh never lets a live lease expire. Shared by every `RoomRegistry` adapter.
 */
export class LeaseHeartbeat {
  readonly #rooms = new Set<string>()
  readonly #timer: NodeJS.Timeout

  constructor(
    options: LeaseOptions,
    refresh: (rooms: string[]) => Promise<void>,
    onRefreshFailed: (error: unknown) => void,
  ) {
    // Every time, rooms or none: the server's own lease, which the rooms it owns live by, is renewed too.
    this.#timer = setInterval(() => refresh([...this.#rooms]).catch(onRefreshFailed), options.leaseMs / 3)
    this.#timer.unref()
  }

  add(room: string): void {
    this.#rooms.add(room)
  }

  delete(room: string): void {
    this.#rooms.delete(room)
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#rooms.clear()
  }
}
