import { Awareness } from 'y-protocols/awareness'
import type * as Y from 'yjs'
import { SymphonyClientError } from './errors.js'

/** What a room's awareness may share, and whom it tells when a state does not fit. */
export interface PresenceGuard {
  /** The server's `MAX_PRESENCE_BYTES`: a bigger state would close the connection for good (1009). */
  maxBytes: number
  /** A state was refused; not called again until one is accepted. */
  onRefused(error: SymphonyClientError): void
}

/**
 * The room's y-protocols `Awareness`, the object editor bindings take (Tiptap's
 * CollaborationCaret, y-codemirror.next, y-monaco, Lexical), and what `room.presence` reads and
 * writes. It keeps local states within what the server accepts: a state over `maxBytes` would
 * close the connection with 1009, which no reconnect survives (the state would be sent again), so
 * it is refused here instead: the previous state stays, nothing is sent, and the room reports
 * `PRESENCE_TOO_BIG`. It speaks for one client id (the server lets a connection introduce eight).
 */
export class RoomAwareness extends Awareness {
  // Not #private fields: Awareness's constructor calls setLocalState before they exist.
  declare private guard: PresenceGuard | undefined
  declare private refusing: boolean

  constructor(doc: Y.Doc, guard: PresenceGuard) {
    super(doc)
    this.guard = guard
    this.refusing = false
  }

  override setLocalState(state: Record<string, unknown> | null): void {
    const { guard } = this
    // null is leaving; no guard yet is Awareness's constructor setting {}.
    const problem = guard && state ? presenceStateProblem(state, guard.maxBytes) : null
    if (guard && problem) {
      if (!this.refusing) {
        guard.onRefused(new SymphonyClientError('PRESENCE_TOO_BIG', `presence not shared: ${problem}`))
      }
      this.refusing = true
      return
    }
    this.refusing = false
    super.setLocalState(state)
  }
}

/** Why the server would refuse `state` (over `maxBytes` of JSON in UTF-8), or null when it fits. */
function presenceStateProblem(state: Record<string, unknown>, maxBytes: number): string | null {
  const bytes = new TextEncoder().encode(JSON.stringify(state)).length
  return bytes > maxBytes ? `the state is ${bytes} bytes of JSON, over the server's ${maxBytes}` : null
}
