import { setImmediate as nextTurn } from 'node:timers/promises'
import type * as Y from 'yjs'
import { ServerBusyError } from '../errors.js'
import { type ClockRanges, HeldContent, rangesOf } from '../protocol/held-content.js'
import { checkReservedWrites } from '../protocol/reserved-writes.js'
import { checkUpdate, type WaitingBudget } from '../protocol/update-guard.js'
import type { ScannedUpdate } from '../protocol/update-scan.js'
import type { CutUpdate } from '../protocol/update-slices.js'
import { waitingStructs } from '../protocol/yjs-internals.js'
import { AuthorBinding, type AuthorBindingInit, type Authorship, type BindingSize } from './author-binding.js'
import type { Writer } from './update-origin.js'

/** A client's update as checked: what its authors need, and what the guard read of it. */
export interface CheckedUpdate {
  authorship: Authorship
  scanned: ScannedUpdate
}

export interface ClientUpdateChecksInit extends Omit<AuthorBindingInit, 'doc'> {
  doc: Y.Doc
  budget: WaitingBudget
}

/**
 * Every check a room runs on a client's update (or a REST write) before applying it, past the
 * frame's decoding: the update guard, the server's reserved parts, the content under ids the
 * room holds, and the authors of the ids it writes. Peers, the journal and snapshots are trusted
 * (their server checked them) and skip all of it.
 */
export class ClientUpdateChecks {
  readonly authors: AuthorBinding
  readonly #doc: Y.Doc
  readonly #budget: WaitingBudget
  readonly #held: HeldContent
  /** The clock ranges of the big update being applied: no other client update may write there meanwhile. */
  #reserved: ClockRanges | null = null

  constructor({ doc, budget, ...binding }: ClientUpdateChecksInit) {
    this.#doc = doc
    this.#budget = budget
    this.#held = new HeldContent(doc)
    this.authors = new AuthorBinding({ doc, ...binding })
  }

  /**
   * Checks an update applied in one go. Throws what the checks refuse with; returns what its
   * authors need before it may be applied.
   */
  check(update: Uint8Array, writer: Writer): CheckedUpdate {
    const scanned = checkUpdate(update, this.#doc, this.#budget)
    this.authors.checkServerParts(checkReservedWrites(scanned), this.#held)
    const ranges = rangesOf(scanned)
    this.#checkNotReserved(ranges)
    if (this.#held.overlaps(ranges)) this.#held.compare(update)
    return { authorship: this.authors.admit(ranges, this.#held, writer), scanned }
  }

  /**
   * Checks a big update the worker sliced (the guard's part ran there), comparing a slice per
   * event-loop turn, and binds the ids it writes. Resolves once it may be applied now (in the
   * same turn: nothing it was checked against has changed). Call `reserve` first.
   */
  async checkSliced(
    update: CutUpdate,
    writer: Writer,
    /** Throws if the document has no room for the binding (before anything is bound). */
    ensureRoomFor: (binding: BindingSize) => void,
  ): Promise<void> {
    for (;;) {
      this.authors.checkServerParts(update.server, this.#held)
      const before = this.#heldOf(update.ranges)
      const waitingBefore = waitingStructs(this.#doc)?.update
      for (const [index, slice] of update.slices.entries()) {
        if (!this.#held.overlaps(update.sliceRanges[index] as ClockRanges)) continue
        this.#held.compare(slice)
        await nextTurn()
      }
      const authorship = this.authors.admit(update.ranges, this.#held, writer)
      if (authorship.kind === 'apply') {
        // Peers may have brought structs under its ids while it was compared: then compare again.
        if (this.#heldOf(update.ranges) === before && waitingStructs(this.#doc)?.update === waitingBefore) {
          return
        }
        continue
      }
      if (authorship.kind === 'bind') {
        ensureRoomFor(this.authors.sizeOfBinding(authorship.clients, writer))
        await this.authors.bind(authorship.clients, writer)
      } else await authorship.until
    }
  }

  /** Keeps other client updates from writing in `ranges` (a big update's) until the returned release. */
  reserve(ranges: ClockRanges): () => void {
    this.#reserved = ranges
    return () => {
      if (this.#reserved === ranges) this.#reserved = null
    }
  }

  /** How far the room's history of these clients reaches. */
  #heldOf(ranges: ClockRanges): string {
    return [...ranges.keys()].map((client) => this.#held.end(client)).join()
  }

  /** Refuses (1013) an update that writes where the big update being applied does. */
  #checkNotReserved(ranges: ClockRanges): void {
    if (!this.#reserved) return
    for (const [client, own] of ranges) {
      const reserved = this.#reserved.get(client)
      if (!reserved) continue
      const end = this.#held.end(client)
      for (let i = 0; i < own.length; i += 2) {
        const from = Math.max(own[i] as number, end)
        const to = own[i + 1] as number
        for (let j = 0; j < reserved.length; j += 2) {
          if (from < to && from < (reserved[j + 1] as number) && (reserved[j] as number) < to) {
            throw new ServerBusyError(
              `client id ${client} is being written by a big update this room is applying; try again`,
            )
          }
        }
      }
    }
  }
}
