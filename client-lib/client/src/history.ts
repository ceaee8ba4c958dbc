import * as Y from 'yjs'
import { guarded } from './listeners.js'

/**
 * Any shared type (map, list, text, XML). `any` because Yjs types its event handlers invariantly:
 * a `Y.Map<string>` is not an `AbstractType<unknown>`.
 *
 * @example
 * const tracked: SharedType[] = [room.map('shapes'), room.text('title')]
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type SharedType = Y.AbstractType<any>

/**
 * Undo and redo of this user's own changes; see `room.history`.
 *
 * @example
 * const history: History = room.history(room.map('shapes'))
 * history.subscribe(() => (undoButton.disabled = !history.canUndo()))
 */
export interface History {
  /** Reverts this user's last change; false when there is none. */
  undo(): boolean
  /** Re-applies the last undone change; false when there is none. */
  redo(): boolean
  canUndo(): boolean
  canRedo(): boolean
  /** Forgets both stacks. */
  clear(): void
  /**
   * Ends the current undo step: changes within 500 ms otherwise merge into one step, so call
   * this at a natural boundary (end of a drag, a stroke, a word).
   */
  stopCapturing(): void
  /** Calls `listener` when the stacks change (to enable buttons). Returns the unsubscribe. */
  subscribe(listener: () => void): () => void
  /** Stops tracking (a component that made this history unmounts). Leaving the room does it too. */
  destroy(): void
}

/**
 * A `History` over `scope` (some types, or the whole document: every type, made now or later),
 * tracking only transactions whose origin is in `localOrigins`: the user's own edits. Remote and
 * stored updates arrive with other origins, so undo never reverts what someone else did.
 */
export function createHistory(
  scope: SharedType | SharedType[] | Y.Doc,
  localOrigins: ReadonlySet<unknown>,
  onDestroy: () => void,
): History {
  const manager = new Y.UndoManager(scope, {
    trackedOrigins: new Set(localOrigins),
    // A history of the whole document takes any transaction of a tracked origin for a step, even
    // one that changed nothing: its own clear(), or a type first read as a Y.XmlFragment.
    captureTransaction: (transaction) => transaction.changed.size > 0,
  })
  return {
    undo: () => manager.undo() !== null,
    redo: () => manager.redo() !== null,
    canUndo: () => manager.canUndo(),
    canRedo: () => manager.canRedo(),
    clear: () => manager.clear(),
    stopCapturing: () => manager.stopCapturing(),
    subscribe(listener) {
      const events = ['stack-item-added', 'stack-item-popped', 'stack-cleared'] as const
      const safe = guarded(listener)
      for (const event of events) manager.on(event, safe)
      return () => {
        for (const event of events) manager.off(event, safe)
      }
    },
    destroy() {
      manager.destroy()
      onDestroy()
    },
  }
}
