import type { ServerEvents } from '../core/server-events.js'
import { callWithin } from '../deadline.js'
import type { Logger } from '../logger.js'
import {
  type ChangeInfo,
  DEFAULT_ON_CHANGE_DEBOUNCE_MS,
  DEFAULT_ON_CHANGE_MAX_WAIT_MS,
  type ServerHooks,
} from '../server-hooks.js'
import { ChangeDebounce } from './change-debounce.js'

/** The app's event hooks (`onDisconnect`, `onChange`) as listeners; `onConnect` runs in the gateway, as it may refuse. */
export interface HooksObserver {
  /** Runs the `onChange` calls still pending and resolves once every call has settled (shutdown). */
  settle(): Promise<void>
}

export function observeHooks(
  events: ServerEvents,
  { hooks, hookTimeoutMs, logger }: { hooks: ServerHooks; hookTimeoutMs: number; logger: Logger },
): HooksObserver {
  const { onDisconnect, onChange } = hooks
  // A call that hangs is logged once it is late; it goes on, and the next calls do not wait for it.
  const bounded = (call: () => unknown, what: string) => callWithin(call, hookTimeoutMs, `the ${what} hook`)
  if (onDisconnect) {
    events.on('connection.left', ({ room, connectionId, userId, name, info, access }) => {
      // The event's own fields only: the app keeps nothing of the stream's objects.
      const call = () =>
        bounded(() => onDisconnect({ room, connectionId, userId, name, info, access }), 'onDisconnect')
      call().catch((err: unknown) =>
        logger.error({ err, room, connectionId }, 'the onDisconnect hook failed'),
      )
    })
  }
  if (!onChange) return { settle: async () => {} }
  const changes = new ChangeDebounce<ChangeInfo>(
    {
      debounceMs: hooks.onChangeDebounceMs ?? DEFAULT_ON_CHANGE_DEBOUNCE_MS,
      maxWaitMs: hooks.onChangeMaxWaitMs ?? DEFAULT_ON_CHANGE_MAX_WAIT_MS,
    },
    (_room, change) => bounded(() => onChange(change), 'onChange'),
    (err, room) => logger.error({ err, room }, 'the onChange hook failed'),
  )
  events.on('document.changed', ({ room, origin, document }) => {
    // A peer's change is reported by the server it was made on.
    if (origin.kind === 'peer') return
    changes.touch(room, (pending) => ({ room, document, origin, changes: (pending?.changes ?? 0) + 1 }))
  })
  // The document is still readable while the room unloads: report what is pending now.
  events.on('room.unloaded', ({ room }) => changes.flush(room))
  return changes
}
