import type { Room } from '@symphony/client'
import { useCallback, useRef, useSyncExternalStore } from 'react'

export interface RoomStore<T> {
  /** Calls `changed` when the value may have changed; returns the unsubscribe. */
  subscribe(room: Room<object>, changed: () => void): () => void
  /** Reads the value now. */
  read(room: Room<object>): T
  /** While there is no room (server rendering, or before it is entered); must be one constant. */
  empty: T
  /** A value equal to the last one is not a change: the last one is kept and nothing re-renders. */
  isEqual?: (a: T, b: T) => boolean
  /**
   * What `read` picks from what `key` names (a selector): a new one reads afresh, without
   * subscribing again, so an inline selector costs a read per render and no resubscription.
   */
  selection?: unknown
}

/** The last value read, and what it was read from: while none of that changed, it is current. */
interface Reading<T> {
  room: Room<object>
  key: unknown
  selection: unknown
  version: number
  value: T
}

/**
 * A value of the room through `useSyncExternalStore`: read once per change (not per render),
 * the same object returned until something changed, so components re-render only then. `key`
 * names what is read and subscribed to (a type's name): a new key does both afresh.
 */
export function useRoomStore<T>(room: Room<object> | null, key: unknown, store: RoomStore<T>): T {
  const latest = useRef(store)
  latest.current = store
  const version = useRef(0)
  const cache = useRef<Reading<T> | null>(null)
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new key must subscribe to what it names
  const subscribe = useCallback(
    (notify: () => void) => {
      if (!room) return () => {}
      return latest.current.subscribe(room, () => {
        version.current++
        notify()
      })
    },
    [room, key],
  )
  const getSnapshot = (): T => {
    if (!room) return store.empty
    const { selection } = store
    // A reading of another room is no help: its value is not compared either.
    const cached = cache.current?.room === room ? cache.current : null
    if (cached && cached.key === key && cached.selection === selection && cached.version === version.current)
      return cached.value
    const next = store.read(room)
    const value = cached && (store.isEqual ?? Object.is)(cached.value, next) ? cached.value : next
    cache.current = { room, key, selection, version: version.current, value }
    return value
  }
  return useSyncExternalStore(subscribe, getSnapshot, () => store.empty)
}

/** Equal arrays or plain objects whose items or values are the same (`Object.is`). */
export function shallow<T>(a: T, b: T): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  if (keysA.length !== keysB.length) return false
  return keysA.every(
    (k) =>
      Object.hasOwn(b, k) && Object.is((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  )
}
