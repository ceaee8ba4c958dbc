import type { Room, SymphonyClient, SymphonyClientError } from '@symphony/client'

/**
 * How many mounted `RoomProvider`s hold each room of each client. The last one to unmount leaves
 * the room, one turn later: React's StrictMode unmounts and remounts every component at once in
 * development, and that must not drop the connection and the room's offline copy.
 */
const holders = new WeakMap<SymphonyClient, Map<string, number>>()

export function holdRoom<P extends object>(client: SymphonyClient, id: string): Room<P> {
  const counts = holders.get(client) ?? new Map<string, number>()
  holders.set(client, counts)
  counts.set(id, (counts.get(id) ?? 0) + 1)
  const room = client.enter<P>(id)
  relays.get(room) ?? relays.set(room, new ErrorRelay(room))
  return room
}

/** Errors a room reports, kept until a listener hears them, up to this many. */
const MAX_UNHEARD_ERRORS = 20

/**
 * Passes a room's errors to `useErrorListener`s. It listens from the moment the room is entered,
 * and keeps what arrives before any listener mounts (a refused token is reported once, often
 * before React has rendered the components that listen).
 */
class ErrorRelay {
  readonly #listeners = new Set<(error: SymphonyClientError) => void>()
  #unheard: SymphonyClientError[] = []

  constructor(room: Room<object>) {
    room.on('error', (error) => {
      if (this.#listeners.size === 0) this.#unheard = [...this.#unheard, error].slice(-MAX_UNHEARD_ERRORS)
      for (const listener of this.#listeners) listener(error)
    })
  }

  listen(listener: (error: SymphonyClientError) => void): () => void {
    this.#listeners.add(listener)
    const unheard = this.#unheard
    this.#unheard = []
    for (const error of unheard) listener(error)
    return () => this.#listeners.delete(listener)
  }
}

const relays = new WeakMap<Room<object>, ErrorRelay>()

/** Listens to the errors of a room entered through `holdRoom`. */
export function listenToErrors(
  room: Room<object>,
  listener: (error: SymphonyClientError) => void,
): () => void {
  const relay = relays.get(room) ?? new ErrorRelay(room)
  relays.set(room, relay)
  return relay.listen(listener)
}

export function releaseRoom(client: SymphonyClient, id: string): void {
  const counts = holders.get(client)
  const left = (counts?.get(id) ?? 1) - 1
  if (left > 0) {
    counts?.set(id, left)
    return
  }
  counts?.delete(id)
  setTimeout(() => {
    if (!counts?.has(id)) void client.leave(id)
  }, 0)
}
