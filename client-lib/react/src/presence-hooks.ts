import type { Peer } from '@symphony/client'
import { useCallback } from 'react'
import { useRoomContext } from './context.js'
import { shallow, useRoomStore } from './room-store.js'

/**
 * This user's presence and the function that updates it (merging, like `room.presence.set`).
 *
 * @example
 * const [me, updateMe] = useMyPresence<{ cursor: { x: number; y: number } | null }>()
 * <div onPointerMove={(e) => updateMe({ cursor: { x: e.clientX, y: e.clientY } })} />
 */
export function useMyPresence<P extends object = Record<string, unknown>>(): [
  P | null,
  (partial: Partial<P>) => void,
] {
  const room = useRoomContext<P>()
  const me = useRoomStore<P | null>(room, 'me', {
    subscribe: (r, changed) => r.presence.subscribe(changed),
    read: (r) => r.presence.get() as P | null,
    empty: null,
  })
  return [me, useUpdateMyPresence<P>()]
}

/** The function that updates this user's presence; stable, so it does not re-render anything. */
export function useUpdateMyPresence<P extends object = Record<string, unknown>>(): (
  partial: Partial<P>,
) => void {
  const room = useRoomContext<P>()
  return useCallback((partial: Partial<P>) => room?.presence.set(partial), [room])
}

const NO_ONE: readonly never[] = Object.freeze([])

/**
 * Everyone else in the room, or what `selector` picks from them. The component re-renders only
 * when the selection changes (compared with `isEqual`, shallow by default): select names, and
 * cursor moves leave it alone.
 *
 * @example
 * const names = useOthers((others) => others.map((o) => o.name))
 */
export function useOthers<P extends object = Record<string, unknown>, T = readonly Peer<P>[]>(
  selector?: (others: readonly Peer<P>[]) => T,
  isEqual: (a: T, b: T) => boolean = shallow,
): T {
  const room = useRoomContext<P>()
  const select = selector ?? ((others: readonly Peer<P>[]) => others as T)
  return useRoomStore<T>(room, 'others', {
    subscribe: (r, changed) => r.presence.subscribe(changed),
    read: (r) => select(r.presence.others() as Peer<P>[]),
    selection: selector,
    empty: (selector ? selector(NO_ONE) : NO_ONE) as T,
    isEqual,
  })
}
