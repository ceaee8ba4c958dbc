import { setImmediate as nextTurn } from 'node:timers/promises'
import * as Y from 'yjs'
import { ServerBusyError } from '../errors.js'
import { checkAndSlice } from './apply-in-slices.js'
import type { BindingSize } from './author-binding.js'
import type { ClientUpdateChecks } from './client-update-checks.js'
import type { DocumentBounds } from './document-bounds.js'
import { BIG_UPDATE_RESERVE_FACTOR, type MemoryCharges } from './memory-budget.js'
import type { RoomJournal } from './room-journal.js'
import type { UpdateApproval } from './update-approval.js'
import type { Writer } from './update-origin.js'

/** What applying a big update touches of its room. */
export interface BigUpdateRoom {
  doc: Y.Doc
  bounds: DocumentBounds
  checks: ClientUpdateChecks
  approval: UpdateApproval | null
  journal: Pick<RoomJournal, 'recordBeforeApplying'>
  memory: MemoryCharges
  /** Runs a step in the room's mailbox (`RoomMailbox`): false, not run, once the room is freed. */
  post(step: () => Promise<boolean>): Promise<boolean>
  /** Applies one slice; true if it changed the document. Its building is reserved already. */
  apply(slice: Uint8Array, writer: Writer): boolean
}

/**
 * A room's big updates (an offline copy synced whole, a long paste): each checked and cut into
 * slices by the worker thread, then applied a slice per event-loop turn, so every other room is
 * served in between. They take turns in the room's mailbox, each with its size reserved against
 * the ceiling while it runs. Each is journaled before its
 * first slice, as anyone may see that slice from then on. Its memory is reserved from the server's
 * budget on arrival, and it is refused (`ServerBusyError`) when the budget cannot take it.
 */
export class BigUpdates {
  constructor(private readonly room: BigUpdateRoom) {}

  /**
   * Resolves with whether `update` changed the document (to be forwarded then); throws
   * `ServerBusyError` at once when the budget has no memory for it.
   */
  apply(writer: Writer, update: Uint8Array): Promise<boolean> {
    return this.#reserved(update, () => this.room.post(() => this.#apply(writer, update)))
  }

  /** `apply`, from a step already running in the room's mailbox. */
  applyInStep(writer: Writer, update: Uint8Array): Promise<boolean> {
    return this.#reserved(update, () => this.#apply(writer, update))
  }

  /** Runs `applying` with the update's memory reserved from the budget, or refuses it at once. */
  #reserved(update: Uint8Array, applying: () => Promise<boolean>): Promise<boolean> {
    const { memory } = this.room
    const reserved = BIG_UPDATE_RESERVE_FACTOR * update.length
    if (!memory.reserve('big-update', reserved)) {
      throw new ServerBusyError('the server has no memory to spare for an update this big now; retry later')
    }
    return applying().finally(() => memory.charge('big-update', -reserved))
  }

  async #apply(writer: Writer, update: Uint8Array): Promise<boolean> {
    const { doc, bounds, checks, journal } = this.room
    bounds.ensureRoomFor(update.length)
    // Refused here, before the worker reads it, when the document has no room for any more structs.
    const maxStructs = bounds.structsLeft()
    bounds.ensureStructsFor(1)
    // Reserved against the ceiling (and charged) while it waits and applies; returned after, as
    // each slice counts its own bytes when applied.
    bounds.reserveBigBytes(update.length)
    try {
      const cut = await checkAndSlice(update, Y.encodeStateVector(doc), maxStructs)
      // Checked whole on the worker by now: the app may build the document it would make.
      await this.room.approval?.approve(writer, update)
      // From here until it is applied, no other client writes where it does.
      const release = checks.reserve(cut.ranges)
      let changed = false
      try {
        const roomForBinding = (binding: BindingSize) => {
          bounds.ensureRoomFor(binding.bytes)
          bounds.ensureStructsFor(cut.structs + binding.structs)
        }
        await checks.checkSliced(cut, writer, roomForBinding)
        bounds.ensureStructsFor(cut.structs) // against what other updates added meanwhile
        bounds.ensureMemoryFor(
          { structs: cut.structs, bytes: update.length, builtBytes: cut.builtBytes },
          true,
        )
        bounds.reserveBigContent(cut) // too, as its slices are applied over several turns
        const journaled = journal.recordBeforeApplying(update)
        try {
          // Applied to the end even if the client leaves meanwhile: it passed the checks and is
          // journaled, and what is applied must also be forwarded.
          for (const [index, slice] of cut.slices.entries()) {
            if (index > 0) await nextTurn()
            changed = this.room.apply(slice, writer) || changed
          }
        } finally {
          journaled.applied()
          bounds.releaseBigContent(cut)
        }
      } finally {
        release()
      }
      return changed
    } finally {
      bounds.releaseBigBytes(update.length)
    }
  }
}
