import { type ClientOptions, createClient, type Room, type SymphonyClient } from '@symphony/client'
import { type ReactNode, useEffect, useRef, useState } from 'react'
import { ClientContext, RoomContext, useClient } from './context.js'
import { holdRoom, releaseRoom } from './shared-rooms.js'

/**
 * A client made with `createClient`, or the options to make one with: `client` when the app
 * uses it outside React too, or wants to `destroy()` it.
 */
export type SymphonyProviderProps = (
  | {
      /** From `createClient`, made once (outside the component, or in a `useState` initializer). */
      client: SymphonyClient
    }
  | ClientOptions
) & { children?: ReactNode }

/**
 * Makes a Symphony client available to the rooms below it.
 *
 * @example
 * const client = createClient({ url: 'wss://sync.example.com', getToken })
 * root.render(<SymphonyProvider client={client}><App /></SymphonyProvider>)
 * // or, the provider making the client:
 * root.render(<SymphonyProvider url="wss://sync.example.com" getToken={getToken}><App /></SymphonyProvider>)
 */
export function SymphonyProvider({ children, ...props }: SymphonyProviderProps) {
  // Options make a client at the first render, once: later options are not read (a new client
  // would drop every room). createClient connects nothing until a room is entered, so this is
  // safe on the server too; the rooms are left when their RoomProviders unmount.
  const [made] = useState(() => ('client' in props ? null : createClient(props)))
  const client = 'client' in props ? props.client : made
  return <ClientContext.Provider value={client}>{children}</ClientContext.Provider>
}

export interface RoomProviderProps<P extends object> {
  /** The room's name: any 1–128 characters without control characters. */
  id: string
  /** This user's presence when entering, unless the room already has one from before. */
  initialPresence?: P
  children?: ReactNode
}

/**
 * Enters the room `id` while mounted (in the browser only: nothing connects during server
 * rendering) and gives it to the hooks below. Several providers of one room share it.
 *
 * @example
 * <RoomProvider id="todos" initialPresence={{ name: 'Ada' }}><TodoList /></RoomProvider>
 */
export function RoomProvider<P extends object>({ id, initialPresence, children }: RoomProviderProps<P>) {
  const client = useClient()
  const [room, setRoom] = useState<Room<P> | null>(null)
  const initial = useRef(initialPresence)
  useEffect(() => {
    const entered = holdRoom<P>(client, id)
    const current = entered.presence.get()
    if (initial.current && (!current || Object.keys(current).length === 0))
      entered.presence.set(initial.current)
    setRoom(entered)
    return () => {
      setRoom(null)
      releaseRoom(client, id)
    }
  }, [client, id])
  return <RoomContext.Provider value={room}>{children}</RoomContext.Provider>
}
