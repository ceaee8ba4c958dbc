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
}

/**
 * A value of the room through `useSyncExternalStore`: read once per change (not per render),
 * the same object returned until something changed, so components re-render only then. `key`
 * names what is read (a type's name, a selector): a new key reads afresh.
 */
export function useRoomStore<T>(room: Room<object> | null, key: unknown, store: RoomStore<T>): T {
  const latest = useRef(store)
  latest.current = store
  const version = useRef(0)
  const cache = useRef<{ room: Room<object>; key: unknown; version: number; value: T } | null>(null)
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
    const cached = cache.current
    if (cached && cached.room === room && cached.key === key && cached.version === version.current) {
      return cached.value
    }
    const next = store.read(room)
    const same = cached && cached.room === room && (store.isEqual ?? Object.is)(cached.value, next)
    const value = same ? cached.value : next
    cache.current = { room, key, version: version.current, value }
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
