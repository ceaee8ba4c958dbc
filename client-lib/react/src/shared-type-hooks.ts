import type { Room, SharedType } from '@symphony/client'
import { useRoomContext } from './context.js'
import { useRoomStore } from './room-store.js'

const NO_ITEMS: readonly never[] = Object.freeze([])
const NO_ENTRIES: Readonly<Record<string, never>> = Object.freeze({})

/** Re-reads `type` after each change inside it (nested ones too), and only then. */
function observe(type: (room: Room<object>) => SharedType) {
  return (room: Room<object>, changed: () => void) => {
    const observed = type(room)
    const onChange = () => changed()
    observed.observeDeep(onChange)
    return () => observed.unobserveDeep(onChange)
  }
}

/**
 * The shared list `name` as a plain array (nested shared types as JSON). The same array until the
 * list changes; changes elsewhere in the room do not re-render. Write through `useRoom()`.
 *
 * @example
 * const todos = useList<string>('todos')
 * return <ul>{todos.map((todo, i) => <li key={i}>{todo}</li>)}</ul>
 */
export function useList<T = unknown>(name: string): readonly T[] {
  return useRoomStore<readonly T[]>(useRoomContext(), name, {
    subscribe: observe((room) => room.list(name)),
    read: (room) => room.list<T>(name).toJSON() as T[],
    empty: NO_ITEMS,
  })
}

/**
 * The shared map `name` as a plain object, re-rendering only when the map changes.
 *
 * @example
 * const settings = useMap<string>('settings')
 * return <h1>{settings.title}</h1>
 */
export function useMap<T = unknown>(name: string): Readonly<Record<string, T>> {
  return useRoomStore<Readonly<Record<string, T>>>(useRoomContext(), name, {
    subscribe: observe((room) => room.map(name)),
    read: (room) => room.map<T>(name).toJSON() as Record<string, T>,
    empty: NO_ENTRIES,
  })
}

/**
 * The shared text `name` as a string, re-rendering only when it changes.
 *
 * @example
 * const title = useText('title')
 */
export function useText(name: string): string {
  return useRoomStore(useRoomContext(), name, {
    subscribe: observe((room) => room.text(name)),
    read: (room) => room.text(name).toString(),
    empty: '',
  })
}
