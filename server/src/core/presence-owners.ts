import type { AwarenessEntry } from '../protocol/codec.js'
import { PRESENCE_OUTDATED_MS } from './presence-table.js'

/** Below this many owners the map is not purged on writes. */
const PURGE_MIN_OWNERS = 64

interface Ownership<Owner> {
  owner: Owner
  /** When the owner last spoke for the client: ownership lapses 30 s after that. */
  seenAt: number
}

/**
 * Which source speaks for each awareness client id of a room: the first to send a state for it,
 * until it removes it, leaves, or falls silent for 30 s. y-websocket's provider sends back every
 * presence it hears (its awareness 'update' handler ignores the origin), so "sent an entry for
 * the id" cannot tell an owner from an echo; who spoke first can, as an echo always follows its
 * original on each server. Entries from anyone else never change the owner (a spoofed removal
 * does not free an id).
 */
export class PresenceOwners<Owner> {
  readonly #owners = new Map<number, Ownership<Owner>>()
  #purgeAt = PURGE_MIN_OWNERS

  /**
   * Records what `source` sent; returns the entries among `entries` whose ids it owns now: `entries`
   * itself when it owns them all (the common case, one entry of the sender's own), so a presence
   * message allocates nothing here.
   */
  saw(entries: AwarenessEntry[], source: Owner, now = Date.now()): AwarenessEntry[] {
    if (this.#owners.size >= this.#purgeAt) this.#purge(now)
    let owned: AwarenessEntry[] | null = null
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index] as AwarenessEntry
      if (this.#take(entry, source, now)) owned?.push(entry)
      else owned ??= entries.slice(0, index)
    }
    return owned ?? entries
  }

  /** Whether `source` owns `entry`'s id once it is recorded (a removal frees the id: not owned). */
  #take({ clientId, state }: AwarenessEntry, source: Owner, now: number): boolean {
    const current = this.#current(clientId, now)
    if (state === null) {
      // Its owner's removal frees the id; anyone else's is ignored.
      if (current?.owner === source) this.#owners.delete(clientId)
      return false
    }
    if (!current) this.#owners.set(clientId, { owner: source, seenAt: now })
    else if (current.owner === source) current.seenAt = now
    else return false
    return true
  }

  /** The owner of `clientId`'s presence now, or undefined when no one speaks for it. */
  ownerOf(clientId: number, now = Date.now()): Owner | undefined {
    return this.#current(clientId, now)?.owner
  }

  /** `owner` left: the ids it spoke for are free. */
  release(owner: Owner, clientIds: Iterable<number>): void {
    for (const clientId of clientIds) {
      if (this.#owners.get(clientId)?.owner === owner) this.#owners.delete(clientId)
    }
  }

  /** Ids held, lapsed ones not yet purged included: what this costs in memory. */
  get tracked(): number {
    return this.#owners.size
  }

  #current(clientId: number, now: number): Ownership<Owner> | undefined {
    const current = this.#owners.get(clientId)
    if (current && now - current.seenAt >= PRESENCE_OUTDATED_MS) {
      this.#owners.delete(clientId)
      return undefined
    }
    return current
  }

  #purge(now: number): void {
    for (const clientId of [...this.#owners.keys()]) this.#current(clientId, now)
    this.#purgeAt = Math.max(PURGE_MIN_OWNERS, 2 * this.#owners.size)
  }
}
