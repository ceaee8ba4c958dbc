import type { Logger } from '../logger.js'

/** What the budget is spent on, as labelled in `symphony_memory_budget_bytes{kind}`. */
export const MEMORY_KINDS = ['unsent', 'waiting', 'big-update', 'presence'] as const
export type MemoryKind = (typeof MEMORY_KINDS)[number]

/**
 * Bytes reserved per byte of a big update before its check and slicing start: the worker's decode
 * and the slices hold a small multiple of the update (update-scan bounds that by its struct count).
 */
export const BIG_UPDATE_RESERVE_FACTOR = 8

/** The shortest time between two looks at every connection while the server is over budget. */
const CHECK_INTERVAL_MS = 100

/** What the rooms and connections charge the budget through. */
export interface MemoryCharges {
  /** Adds `bytes` (negative: frees them) to what `kind` holds. O(1): called on every frame sent. */
  charge(kind: MemoryKind, bytes: number): void
  /** Charges `bytes` to `kind` if the budget can take them; false (nothing charged) if it cannot. */
  reserve(kind: MemoryKind, bytes: number): boolean
}

/** One buffer queued on several sockets (a room's sync answer): charged once, however many hold it. */
export interface SharedCharges {
  /** One more socket holds `buffer` unsent; the first charges it. */
  hold(buffer: Uint8Array): void
  /** One socket sent (or dropped) `buffer`; the last frees it. */
  release(buffer: Uint8Array): void
  /** How many sockets hold `buffer` now. */
  holders(buffer: Uint8Array): number
}

/** A connection the budget may close to get back under its limit. */
export interface MemoryHolder {
  /** What it holds now (unsent bytes, frames waiting, presence); read only when over budget. */
  readonly heldBytes: number
  /** Closes it; what it holds is freed, and uncharged, once its socket is gone. */
  shed(): void
}

export interface MemoryBudgetOptions {
  limitBytes: number
  logger: Logger
  /** Told of every holder shed and the bytes it held. */
  onShed?: (heldBytes: number) => void
}

/**
 * One server-wide budget for the memory clients make the server hold: bytes queued to sockets,
 * frames waiting for their room, big updates being applied, presence. A sync answer queued on many
 * sockets is one buffer, charged once (`hold`); other frames are charged per socket, so frames a
 * broadcast shares count once for each socket that has not sent them. Charging is O(1); crossing
 * the limit schedules one look at every connection (at most every `CHECK_INTERVAL_MS`), which
 * closes the ones holding the most until the rest fit. New big work asks first (`reserve`) and is
 * refused while the budget cannot take it.
 */
export class MemoryBudget implements MemoryCharges, SharedCharges {
  readonly limitBytes: number
  #used = 0
  readonly #byKind: Record<MemoryKind, number> = { unsent: 0, waiting: 0, 'big-update': 0, presence: 0 }
  readonly #holders = new Set<MemoryHolder>()
  readonly #shared = new Map<Uint8Array, number>()
  /** Holders shed whose sockets are not gone yet: what they hold is about to be freed. */
  readonly #shedding = new Set<MemoryHolder>()
  #checkTimer: NodeJS.Timeout | null = null
  #lastCheckAt = Number.NEGATIVE_INFINITY
  readonly #logger: Logger
  readonly #onShed: (heldBytes: number) => void

  constructor({ limitBytes, logger, onShed }: MemoryBudgetOptions) {
    this.limitBytes = limitBytes
    this.#logger = logger
    this.#onShed = onShed ?? (() => {})
  }

  get usedBytes(): number {
    return this.#used
  }

  usedBy(kind: MemoryKind): number {
    return this.#byKind[kind]
  }

  charge(kind: MemoryKind, bytes: number): void {
    this.#byKind[kind] += bytes
    this.#used += bytes
    if (bytes > 0 && this.#used > this.limitBytes) this.#scheduleCheck()
  }

  reserve(kind: MemoryKind, bytes: number): boolean {
    if (this.#used + bytes > this.limitBytes) return false
    this.charge(kind, bytes)
    return true
  }

  hold(buffer: Uint8Array): void {
    const holders = this.#shared.get(buffer) ?? 0
    if (holders === 0) this.charge('unsent', buffer.length)
    this.#shared.set(buffer, holders + 1)
  }

  release(buffer: Uint8Array): void {
    const holders = this.#shared.get(buffer) ?? 0
    if (holders > 1) {
      this.#shared.set(buffer, holders - 1)
    } else if (holders === 1) {
      this.#shared.delete(buffer)
      this.charge('unsent', -buffer.length)
    }
  }

  holders(buffer: Uint8Array): number {
    return this.#shared.get(buffer) ?? 0
  }

  /** `holder` may be shed from now on, until `forget`. */
  track(holder: MemoryHolder): void {
    this.#holders.add(holder)
  }

  forget(holder: MemoryHolder): void {
    this.#holders.delete(holder)
    this.#shedding.delete(holder)
  }

  /** Stops the pending look (at shutdown). */
  stop(): void {
    if (this.#checkTimer) clearTimeout(this.#checkTimer)
    this.#checkTimer = null
  }

  #scheduleCheck(): void {
    if (this.#checkTimer) return
    const delay = Math.max(0, this.#lastCheckAt + CHECK_INTERVAL_MS - performance.now())
    this.#checkTimer = setTimeout(() => this.#check(), delay)
    this.#checkTimer.unref()
  }

  /** Closes the holders holding the most until what the others hold fits the limit. */
  #check(): void {
    this.#checkTimer = null
    this.#lastCheckAt = performance.now()
    let excess = this.#used - this.limitBytes
    for (const holder of this.#shedding) excess -= holder.heldBytes
    if (excess <= 0) return
    const heaviest = [...this.#holders]
      .filter((holder) => !this.#shedding.has(holder))
      .map((holder) => ({ holder, bytes: holder.heldBytes }))
      .filter(({ bytes }) => bytes > 0)
      .sort((a, b) => b.bytes - a.bytes)
    let shed = 0
    let freed = 0
    for (const { holder, bytes } of heaviest) {
      if (excess <= 0) break
      this.#shedding.add(holder)
      holder.shed()
      this.#onShed(bytes)
      excess -= bytes
      freed += bytes
      shed++
    }
    if (shed === 0) return // nothing a connection holds: big updates wait, and are refused meanwhile
    this.#logger.warn(
      { limitBytes: this.limitBytes, usedBytes: this.#used, connections: shed, freedBytes: freed },
      'over the memory budget: closed the connections holding the most',
    )
  }
}

/** A budget that takes everything: for rooms and connections built without one (tests, tools). */
export const UNBOUNDED_MEMORY: MemoryCharges = {
  charge() {},
  reserve: () => true,
}
