import type { Awareness } from 'y-protocols/awareness'
import { guarded } from './listeners.js'

/**
 * Another user in the room: their awareness client id and whatever state they set.
 *
 * @example
 * const label = (peer: Peer<{ name?: string }>) => peer.name ?? `user ${peer.clientId}`
 */
export type Peer<P> = P & { clientId: number }

/**
 * Who else is here and what they show (cursor, name, selection): Yjs awareness, with a
 * smaller surface. State is ephemeral: never stored, gone when the user leaves. Peers may send
 * anything, so read their fields defensively.
 *
 * @example
 * room.presence.set({ name: 'Ada', cursor: { x: 10, y: 20 } })
 * const stop = room.presence.subscribe((others) => render(others))
 */
export class Presence<P extends object = Record<string, unknown>> {
  constructor(private readonly awareness: Awareness) {}

  /**
   * Merges `partial` into this user's state and shares it.
   *
   * @example
   * room.presence.set({ cursor: null }) // pointer left the canvas
   */
  set(partial: Partial<P>): void {
    this.awareness.setLocalState({ ...(this.awareness.getLocalState() ?? {}), ...partial })
  }

  /**
   * This user's state, or null before the first `set`.
   *
   * @example
   * const me = room.presence.get()
   */
  get(): P | null {
    return (this.awareness.getLocalState() as P | null) ?? null
  }

  /**
   * Everyone else in the room who has set a state.
   *
   * @example
   * for (const peer of room.presence.others()) drawCursor(peer.clientId, peer.cursor)
   */
  others(): Peer<P>[] {
    const peers: Peer<P>[] = []
    for (const [clientId, state] of this.awareness.getStates()) {
      if (clientId !== this.awareness.clientID && state) peers.push({ ...(state as P), clientId })
    }
    return peers
  }

  /**
   * Calls `listener` with `others()` whenever someone's state changes, joins or leaves.
   * Returns the function that unsubscribes.
   *
   * @example
   * const unsubscribe = room.presence.subscribe((others) => (counter.textContent = String(others.length)))
   */
  subscribe(listener: (others: Peer<P>[]) => void): () => void {
    const notify = guarded(listener)
    const onChange = () => notify(this.others())
    this.awareness.on('change', onChange)
    return () => this.awareness.off('change', onChange)
  }
}
