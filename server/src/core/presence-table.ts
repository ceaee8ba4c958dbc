import { type AwarenessEntry, encodeAwarenessTexts } from '../protocol/codec.js'

/**
 * y-protocols' `outdatedTimeout`: clients renew their presence every 15 s, so a state not renewed
 * for 30 s belongs to a client that is gone without saying so.
 */
export const PRESENCE_OUTDATED_MS = 30_000

/** Below this many entries a table is not purged on writes. */
const PURGE_MIN_CLIENTS = 64

/** What one client's entry costs besides its state's bytes (the map entry and its record). */
export const PRESENCE_ENTRY_BYTES = 64

/** Node's byte-to-string copy, which works on any Uint8Array. */
const BYTES = Buffer.prototype as unknown as {
  latin1Slice(this: Uint8Array, start: number, end: number): string
}

interface Presence {
  clock: number
  /**
   * The JSON text's bytes, one per character (latin1): a copy in the JavaScript heap, cheaper
   * than an ArrayBuffer per state. Null once the client left (its clock is kept, so older states
   * stay refused).
   */
  state: string | null
  updatedAt: number
}

/**
 * A room's presence (cursors), kept as the JSON texts clients sent, for the joiners the server
 * introduces to everyone present. The rules are y-protocols' `Awareness`: a higher clock wins, and
 * a removal wins at an equal clock. Nothing here parses a state or runs a timer: an outdated state
 * is dropped when the table is next read.
 */
export class PresenceTable {
  readonly #clients = new Map<number, Presence>()
  #purgeAt = PURGE_MIN_CLIENTS
  #bytes = 0
  /** Everyone present as one awareness message, until the table changes or a state in it outdates. */
  #frame: { bytes: Uint8Array; until: number } | null = null
  readonly #onBytes: (change: number) => void

  /** `onBytes` is told of every change in what the table holds (the server's memory budget). */
  constructor(onBytes: (change: number) => void = () => {}) {
    this.#onBytes = onBytes
  }

  /** What the table holds: its states' bytes and a fixed cost per client. */
  get bytes(): number {
    return this.#bytes
  }

  #resize(change: number): void {
    if (change === 0) return
    this.#bytes += change
    this.#onBytes(change)
  }

  /** Takes the entries newer than what the table holds; returns how many it took. */
  apply(entries: AwarenessEntry[], now = Date.now()): number {
    let taken = 0
    // Read (and so purged) on every join; a room nobody joins is purged as its table grows.
    if (this.#clients.size >= this.#purgeAt) {
      this.present(now)
      this.#purgeAt = Math.max(PURGE_MIN_CLIENTS, 2 * this.#clients.size)
    }
    for (const { clientId, clock, state } of entries) {
      const current = this.#clients.get(clientId)
      const currentClock = current?.clock ?? 0
      if (currentClock < clock || (currentClock === clock && state === null && current?.state)) {
        // The state is a view into a frame about to be dropped: copied, or it would keep the frame.
        const copy = state && BYTES.latin1Slice.call(state, 0, state.length)
        const entry = current ? 0 : PRESENCE_ENTRY_BYTES
        this.#resize(entry + (copy?.length ?? 0) - (current?.state?.length ?? 0))
        this.#frame = null
        if (current) {
          current.clock = clock
          current.state = copy
          current.updatedAt = now
        } else {
          this.#clients.set(clientId, { clock, state: copy, updatedAt: now })
        }
        taken++
      }
    }
    return taken
  }

  /**
   * Marks these clients gone; returns the entries that tell the others, empty if none was here.
   * As y-protocols does, the removal keeps the client's clock (a removal wins a tie), so the
   * client's next update, one clock on, shows it again when it reconnects.
   */
  remove(clientIds: Iterable<number>, now = Date.now()): AwarenessEntry[] {
    const removed: AwarenessEntry[] = []
    for (const clientId of clientIds) {
      const current = this.#clients.get(clientId)
      if (!current?.state) continue
      this.#resize(-current.state.length)
      this.#frame = null
      current.state = null
      current.updatedAt = now
      removed.push({ clientId, clock: current.clock, state: null })
    }
    return removed
  }

  /** Everyone present, their outdated states dropped first. */
  present(now = Date.now()): AwarenessEntry[] {
    const entries: AwarenessEntry[] = []
    for (const [clientId, presence] of this.#clients) {
      if (now - presence.updatedAt >= PRESENCE_OUTDATED_MS) {
        // Gone (or silent) long enough that no delayed update of theirs is still on its way.
        this.#clients.delete(clientId)
        this.#frame = null
        this.#resize(-PRESENCE_ENTRY_BYTES - (presence.state?.length ?? 0))
      } else if (presence.state) {
        entries.push({ clientId, clock: presence.clock, state: Buffer.from(presence.state, 'latin1') })
      }
    }
    return entries
  }

  /**
   * Everyone present as one awareness message (null if nobody is), kept until the table changes:
   * joiners share one buffer, instead of each copying every state (a room's presence may hold
   * megabytes, and a reconnecting crowd joins many times a second).
   */
  presentFrame(now = Date.now()): Uint8Array | null {
    if (this.#frame && now < this.#frame.until) return this.#frame.bytes
    if (this.present(now).length === 0) return null
    const texts: { clientId: number; clock: number; text: string }[] = []
    let oldest = now
    for (const [clientId, { clock, state, updatedAt }] of this.#clients) {
      if (state === null) continue
      texts.push({ clientId, clock, text: state })
      oldest = Math.min(oldest, updatedAt)
    }
    this.#frame = { bytes: encodeAwarenessTexts(texts), until: oldest + PRESENCE_OUTDATED_MS }
    return this.#frame.bytes
  }

  /** Clients the table holds anything for, present or recently gone. */
  get tracked(): number {
    return this.#clients.size
  }

  /** How many clients are present. */
  get size(): number {
    return this.present().length
  }
}
