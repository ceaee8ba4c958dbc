import * as Y from 'yjs'
import { callWithin, DeadlineError } from '../deadline.js'
import { ServerBusyError, UpdateRefusedError } from '../errors.js'
import type { Logger } from '../logger.js'
import { newDoc } from '../protocol/new-doc.js'
import { HookRefusal, type ServerHooks, type UpdateToApply } from '../server-hooks.js'
import type { MemoryCharges } from './memory-budget.js'
import type { Writer } from './update-origin.js'

/** Bytes of memory reserved per byte of a scratch copy's encoding: its Yjs objects (see document-memory.ts). */
const SCRATCH_BYTES_PER_ENCODED_BYTE = 16

/** What the approval of a room's updates is built from. */
export interface UpdateApprovalInit {
  room: string
  beforeApply: NonNullable<ServerHooks['beforeApply']>
  /** The longest the hook may take; past it the update is refused as busy (`HOOK_TIMEOUT_MS`). */
  timeoutMs: number
  /** The room's state now, encoded: what a scratch copy starts from. */
  state: () => Uint8Array
  memory: MemoryCharges
  logger: Logger
  /** Told of each update refused, with the error's code (`update.refused`). */
  refused?: (writer: Writer, code: string) => void
}

/**
 * Asks the app's `beforeApply` whether an update that passed the server's checks may be applied.
 * Resolves to accept; rejects with `UpdateRefusedError` (4422 / 422) for a refusal or a hook that
 * threw (fail closed, logged), `ServerBusyError` for a hook too slow or a scratch copy the memory
 * budget cannot take.
 */
export class UpdateApproval {
  readonly #init: UpdateApprovalInit

  constructor(init: UpdateApprovalInit) {
    this.#init = init
  }

  /**
   * Decides one update. The room asks in its mailbox (`RoomMailbox`), one update at a time, so
   * each check sees the room as the update before left it (two async checks side by side could
   * each pass while both together break the app's rule).
   */
  async approve(writer: Writer, update: Uint8Array): Promise<void> {
    const { room, beforeApply, timeoutMs } = this.#init
    let scratch: { doc: Y.Doc; reserved: number } | null = null
    let decided = false
    const context: UpdateToApply = {
      room,
      update,
      origin: writer.origin?.kind ?? 'client',
      user: { userId: writer.identity.userId, name: writer.identity.name },
      connectionId: writer.origin ? null : (writer.id ?? null),
      version: writer.origin?.kind === 'restore' ? writer.origin.version : null,
      documentAfter: () => {
        // Only while the hook decides: a copy made later (a hook past its time, or one that kept
        // the update) would hold its memory charge and the copy for good.
        if (decided) throw new Error('documentAfter() is available only while beforeApply decides')
        scratch ??= this.#scratchCopy(update)
        return scratch.doc
      },
    }
    try {
      await callWithin(() => beforeApply(context), timeoutMs, 'the beforeApply hook')
    } catch (error) {
      const refusal = this.#refusal(error)
      this.#init.refused?.(writer, refusal.code)
      throw refusal
    } finally {
      decided = true
      const made = scratch as { doc: Y.Doc; reserved: number } | null
      if (made) {
        made.doc.destroy()
        this.#init.memory.charge('big-update', -made.reserved)
      }
    }
  }

  /** What a failed check is answered with. */
  #refusal(error: unknown): UpdateRefusedError | ServerBusyError {
    const { room, timeoutMs, logger } = this.#init
    if (error instanceof HookRefusal) return new UpdateRefusedError(error.message)
    if (error instanceof ServerBusyError) return error // the scratch copy did not fit
    if (error instanceof DeadlineError) {
      logger.warn({ room, timeoutMs }, 'beforeApply did not answer in time; the update is refused as busy')
      return new ServerBusyError(`the server's check of this update took over ${timeoutMs} ms; retry later`)
    }
    logger.error({ err: error, room }, 'beforeApply threw; the update is refused')
    return new UpdateRefusedError('the server could not check this update')
  }

  /** The room's document with `update` applied, in a copy of its own, reserved against the memory budget. */
  #scratchCopy(update: Uint8Array): { doc: Y.Doc; reserved: number } {
    const state = this.#init.state()
    const reserved = SCRATCH_BYTES_PER_ENCODED_BYTE * (state.length + update.length)
    if (!this.#init.memory.reserve('big-update', reserved)) {
      throw new ServerBusyError('the server has no memory to spare to check this update now; retry later')
    }
    const doc = newDoc()
    try {
      Y.applyUpdate(doc, state)
      Y.applyUpdate(doc, update)
    } catch (error) {
      doc.destroy()
      this.#init.memory.charge('big-update', -reserved)
      throw error
    }
    return { doc, reserved }
  }
}
