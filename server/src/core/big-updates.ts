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
  /** The room was destroyed (unloaded, deleted, lost): nothing more is applied. */
  destroyed(): boolean
  /** Applies one slice; true if it changed the document. Its building is reserved already. */
  apply(slice: Uint8Array, writer: Writer): boolean
}

/**
 * A room's big updates (an offline copy synced whole, a long paste): each checked and cut into
 * slices by the worker thread, then applied a slice per event-loop turn, so every other room is
 * served in between. They take turns per room, and each reserves its size against the ceiling
 * before it waits, so concurrent ones are checked against each other. Each is journaled before its
 * first slice, as anyone may see that slice from then on. Its memory is reserved from the server's
 * budget on arrival, and it is refused (`ServerBusyError`) when the budget cannot take it.
 */
export class BigUpdates {
  #turns: Promise<unknown> = Promise.resolve()

  constructor(private readonly room: BigUpdateRoom) {}

  /**
   * Resolves with whether `update` changed the document (to be forwarded then); throws
   * `ServerBusyError` at once when the budget has no memory for it.
   */
  apply(writer: Writer, update: Uint8Array): Promise<boolean> {
    const { memory } = this.room
    const reserved = BIG_UPDATE_RESERVE_FACTOR * update.length
    if (!memory.reserve('big-update', reserved)) {
      throw new ServerBusyError('the server has no memory to spare for an update this big now; retry later')
    }
    const turn = this.#turns
      .then(() => this.#apply(writer, update))
      .finally(() => memory.charge('big-update', -reserved))
    this.#turns = turn.catch(() => {})
    return turn
  }

  async #apply(writer: Writer, update: Uint8Array): Promise<boolean> {
    const { doc, bounds, checks, journal, destroyed } = this.room
    if (destroyed()) return false
    bounds.ensureRoomFor(update.length)
    // Refused here, before the worker reads it, when the document has no room for any more structs.
    const maxStructs = bounds.structsLeft()
    bounds.ensureStructsFor(1)
    // Reserved against the ceiling (and charged) while it waits and applies; returned after, as
    // each slice counts its own bytes when applied.
    bounds.reserveBigBytes(update.length)
    try {
      const cut = await checkAndSlice(update, Y.encodeStateVector(doc), maxStructs)
      if (destroyed()) return false
      // Checked whole on the worker by now: the app may build the document it would make.
      const approval = this.room.approval
      if (approval) await approval.inTurn(() => approval.approve(writer, update))
      if (destroyed()) return false
      // From here until it is applied, no other client writes where it does.
      const release = checks.reserve(cut.ranges)
      let changed = false
      try {
        const roomForBinding = (binding: BindingSize) => {
          bounds.ensureRoomFor(binding.bytes)
          bounds.ensureStructsFor(cut.structs + binding.structs)
        }
        if (!(await checks.checkSliced(cut, writer, destroyed, roomForBinding))) return false
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
            if (destroyed()) return false
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
