import type { EventSender } from '@symphony/client/wire'
import type { Logger } from '../logger.js'
import { AppMessages } from './app-messages.js'
import { changeOriginOf } from './change-origin.js'
import type { EventStream } from './event-stream.js'
import type { MemoryCharges } from './memory-budget.js'
import type { RoomHooks } from './room-init.js'
import { UpdateApproval } from './update-approval.js'

export interface RoomHookPartsInit {
  room: string
  hooks: RoomHooks | undefined
  /** The largest app message (as a presence state). */
  maxBytes: number
  memory: MemoryCharges
  events: Pick<EventStream, 'emit'> | undefined
  logger: Logger
  /** The room's state now (what `beforeApply`'s `documentAfter()` starts from). */
  state(): Uint8Array
  /** Sends a broadcast event to the room (an app message handler's `broadcast`). */
  broadcast(payload: Uint8Array, sender: EventSender): void
}

/** The parts of a room that run the app's hooks: `beforeApply` on writes, its own message types. */
export function roomHookParts(init: RoomHookPartsInit): {
  approval: UpdateApproval | null
  appMessages: AppMessages | null
} {
  const { room, hooks, memory, events, logger } = init
  const approval = hooks?.beforeApply
    ? new UpdateApproval({
        room,
        beforeApply: hooks.beforeApply,
        timeoutMs: hooks.timeoutMs,
        state: init.state,
        memory,
        logger,
        refused: (writer, code) =>
          events?.emit({
            type: 'update.refused',
            room,
            origin: changeOriginOf(writer),
            code,
            at: Date.now(),
          }),
      })
    : null
  const appMessages = hooks?.messages
    ? new AppMessages({
        room,
        handlers: hooks.messages,
        timeoutMs: hooks.timeoutMs,
        maxBytes: init.maxBytes,
        broadcast: init.broadcast,
        serverSender: hooks.serverSender,
        quota: hooks.appMessageQuota,
        logger,
      })
    : null
  return { approval, appMessages }
}
