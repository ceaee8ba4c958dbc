import type { Logger } from '../logger.js'

/** What the budget is spent on, as labelled in `symphony_memory_budget_bytes{kind}`. */
export const MEMORY_KINDS = [
  'unsent',
  'waiting',
  'big-update',
  'presence',
  'app-messages',
  'reads',
  'documents',
] as const
export type MemoryKind = (typeof MEMORY_KINDS)[number]

/**
 * Bytes reserved per byte of a big update before its check and slicing start: the worker's decode
 * and the slices hold a small multiple of the update (update-scan bounds that by its struct count).
 */
export const BIG_UPDATE_RESERVE_FACTOR = 8

/**
 * The share of the budget the loaded documents may hold (`documents`): past it, edits that add to
 * a document are refused and the largest rooms unloaded. The rest stays for the traffic, which
 * shedding connections frees at once, where a document is freed only when its room unloads.
 */
export const DOCUMENTS_SHARE = 4 / 5

/** The shortest time between two looks at every connection while the server is over budget. */
const CHECK_INTERVAL_MS = 100

/** What the rooms and connections charge the budget through. */
export interface MemoryCharges {
  /** Adds `bytes` (negative: frees them) to what `kind` holds. O(1): called on every frame sent. */
  charge(kind: MemoryKind, bytes: number): void
  /**
   * Charges `bytes` to `kind` if the budget can take them (for `documents`: if their share can);
   * false (nothing charged) if it cannot.
   */
  reserve(kind: MemoryKind, bytes: number): boolean
  /** `holder` may be shed from now on, until `forget` (a room: when its documents are over their share). */
  track(holder: MemoryHolder, as?: 'connection' | 'room'): void
  forget(holder: MemoryHolder): void
  /**
   * Where the loaded documents stand: within their share; over it (rooms are being unloaded, and
   * no room loads); or past the whole budget (no edit adds to a document).
   */
  documents(): DocumentsState
}

export type DocumentsState = 'within' | 'over-share' | 'full'

/** One buffer queued on several sockets (a room's sync answer): charged once, however many hold it. */
export interface SharedCharges {
  /** One more socket holds `buffer` unsent; the first charges it. */
  hold(buffer: Uint8Array): void
  /** One socket sent (or dropped) `buffer`; the last frees it. */
  release(buffer: Uint8Array): void
  /** How many sockets hold `buffer` now. */
  holders(buffer: Uint8Array): number
}

/** A connection (or a room) the budget may close to get back under its limit. */
export interface MemoryHolder {
  /** What it holds now (a connection: unsent bytes, frames waiting, presence; a room: its document); read only when over budget. */
  readonly heldBytes: number
  /**
   * A room: how much its document grew while loaded here (what it held when it loaded fit the
   * share, as it was reserved). Rooms are shed by it first: what made the documents grow pays.
   */
  readonly grownBytes?: number
  /** Closes it (a room: all its connections, so it unloads); what it holds is freed, and uncharged, once it is gone. */
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
 * refused while the budget cannot take it. The loaded documents are charged too, by estimate, and
 * kept to their share of the budget: an edit that would pass it is refused, and past it the rooms
 * holding the most are unloaded (their connections closed), as a document cannot be freed otherwise.
 */
export class MemoryBudget implements MemoryCharges, SharedCharges {
  readonly limitBytes: number
  /** What the loaded documents may hold: `DOCUMENTS_SHARE` of the limit. */
  readonly documentsLimitBytes: number
  #used = 0
  readonly #byKind: Record<MemoryKind, number> = {
    unsent: 0,
    waiting: 0,
    'big-update': 0,
    presence: 0,
    'app-messages': 0,
    reads: 0,
    documents: 0,
  }
  readonly #holders = new Set<MemoryHolder>()
  readonly #rooms = new Set<MemoryHolder>()
  readonly #shared = new Map<Uint8Array, number>()
  /** Holders shed whose sockets are not gone yet: what they hold is about to be freed. */
  readonly #shedding = new Set<MemoryHolder>()
  #checkTimer: NodeJS.Timeout | null = null
  #lastCheckAt = Number.NEGATIVE_INFINITY
  readonly #logger: Logger
  readonly #onShed: (heldBytes: number) => void

  constructor({ limitBytes, logger, onShed }: MemoryBudgetOptions) {
    this.limitBytes = limitBytes
    this.documentsLimitBytes = Math.floor(limitBytes * DOCUMENTS_SHARE)
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
    if (bytes > 0 && (this.#used > this.limitBytes || this.#documentsExcess() > 0)) this.#scheduleCheck()
  }

  reserve(kind: MemoryKind, bytes: number): boolean {
    // A big edit is held to the documents' share alone: traffic past the limit is the shedding's
    // to free, and must not stop the writers of a room whose readers lag.
    const fits =
      kind === 'documents' ? this.#documentsExcess() + bytes <= 0 : this.#used + bytes <= this.limitBytes
    if (!fits) return false
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

  /**
   * `holder` may be shed from now on, until `forget`: a connection when the budget is over its
   * limit, a room when the documents are over their share. Tracking a holder being shed again
   * (a room someone rejoined) makes it sheddable once more.
   */
  track(holder: MemoryHolder, as: 'connection' | 'room' = 'connection'): void {
    ;(as === 'room' ? this.#rooms : this.#holders).add(holder)
    this.#shedding.delete(holder)
  }

  forget(holder: MemoryHolder): void {
    this.#holders.delete(holder)
    this.#rooms.delete(holder)
    this.#shedding.delete(holder)
  }

  documents(): DocumentsState {
    if (this.#byKind.documents > this.limitBytes) return 'full'
    return this.#documentsExcess() > 0 ? 'over-share' : 'within'
  }

  #documentsExcess(): number {
    return this.#byKind.documents - this.documentsLimitBytes
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

  /**
   * Unloads the rooms that grew the most while loaded (then the largest) until the other
   * documents fit their share, then closes the connections holding the most until what the others
   * hold fits the limit.
   */
  #check(): void {
    this.#checkTimer = null
    this.#lastCheckAt = performance.now()
    const shedRooms = [...this.#shedding].filter((holder) => this.#rooms.has(holder))
    const rooms = this.#shedHeaviest(this.#rooms, this.#documentsExcess(), shedRooms)
    if (rooms.shed > 0) {
      this.#logger.warn(
        { documentsLimitBytes: this.documentsLimitBytes, documentsBytes: this.#byKind.documents, ...rooms },
        'documents over their share of the memory budget: unloading the rooms that grew the most',
      )
    }
    // What every holder being shed holds is about to be freed: rooms' documents count in the total too.
    const connections = this.#shedHeaviest(this.#holders, this.#used - this.limitBytes, this.#shedding)
    if (connections.shed > 0) {
      this.#logger.warn(
        {
          limitBytes: this.limitBytes,
          usedBytes: this.#used,
          connections: connections.shed,
          freedBytes: connections.freed,
        },
        'over the memory budget: closed the connections holding the most',
      )
    }
  }

  /** Sheds the heaviest of `holders` until `excess`, less what `beingShed` hold, is gone. */
  #shedHeaviest(
    holders: Set<MemoryHolder>,
    excess: number,
    beingShed: Iterable<MemoryHolder>,
  ): { shed: number; freed: number } {
    let left = excess
    for (const holder of beingShed) left -= holder.heldBytes
    let shed = 0
    let freed = 0
    if (left <= 0) return { shed, freed }
    const heaviest = [...holders]
      .filter((holder) => !this.#shedding.has(holder))
      .map((holder) => ({ holder, bytes: holder.heldBytes, grown: holder.grownBytes ?? 0 }))
      .filter(({ bytes }) => bytes > 0)
      .sort((a, b) => b.grown - a.grown || b.bytes - a.bytes)
    for (const { holder, bytes } of heaviest) {
      if (left <= 0) break
      this.#shedding.add(holder)
      holder.shed()
      this.#onShed(bytes)
      left -= bytes
      freed += bytes
      shed++
    }
    // With nothing a connection holds, big updates wait, and are refused meanwhile.
    return { shed, freed }
  }
}

/** A budget that takes everything: for rooms and connections built without one (tests, tools). */
export const UNBOUNDED_MEMORY: MemoryCharges = {
  charge() {},
  reserve: () => true,
  track() {},
  forget() {},
  documents: () => 'within',
}
