import type { Room, SymphonyClient } from '@symphony/client'
import { createContext, useContext } from 'react'

export const ClientContext = createContext<SymphonyClient | null>(null)

/** Undefined: no `RoomProvider` above. Null: inside one, the room not entered yet (or on the server). */
// biome-ignore lint/suspicious/noExplicitAny: each hook narrows the presence type for its caller
export const RoomContext = createContext<Room<any> | null | undefined>(undefined)

export function useClient(): SymphonyClient {
  const client = useContext(ClientContext)
  if (!client) throw new Error('@symphony/react: put a <SymphonyProvider client={…}> above this component')
  return client
}

/** The room of the nearest `RoomProvider`, or null until it is entered. */
export function useRoomContext<P extends object>(): Room<P> | null {
  const room = useContext(RoomContext)
  if (room === undefined)
    throw new Error('@symphony/react: room hooks need a <RoomProvider id="…"> above them')
  return room as Room<P> | null
}
