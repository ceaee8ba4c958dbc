import { CloseCode } from '@symphony/client/wire'
import { ServerBusyError } from '../errors.js'
import { encodeIncarnation } from '../protocol/codec.js'
import type { Connection } from './connection.js'
import type { RoomManager } from './room-manager.js'

/** A connection's stay in its room, from the socket opening to its closing. */
export interface Admission {
  /** Settles once the connection joined the loaded room, or was closed because it could not load. */
  joined: Promise<void>
  /** The socket closed: leave the room and release the hold on it (once; later calls do nothing). */
  leave(): void
}

/**
 * Holds `connection`'s room and joins it once loaded: frames that arrive meanwhile wait in the
 * connection. A room that cannot load closes the connection with TryAgainLater.
 */
export function admit(rooms: Pick<RoomManager, 'acquire'>, connection: Connection): Admission {
  const acquired = rooms.acquire(connection.roomName)
  const joined = acquired.then(
    (hold) => {
      const claimed = connection.incarnation
      // A copy of a deleted incarnation must never sync its content into this one.
      if (typeof claimed === 'number' && claimed < hold.generation) {
        connection.close(CloseCode.RoomDeleted, 'the room was deleted')
        return
      }
      // A later incarnation than this server holds: this copy was deleted while the server missed
      // it (it finds out at its next save). The client retries, never syncing into the old one.
      if (typeof claimed === 'number' && claimed > hold.generation) {
        connection.close(CloseCode.TryAgainLater, 'this server holds an older incarnation of the room; retry')
        return
      }
      if (claimed !== null) connection.send(encodeIncarnation(hold.generation))
      connection.attach(hold.room)
    },
    (error) =>
      connection.close(
        CloseCode.TryAgainLater,
        error instanceof ServerBusyError ? error.message : 'the room could not be loaded; retry',
      ),
  )
  let left = false
  return {
    joined,
    leave() {
      if (left) return
      left = true
      connection.detach()
      acquired.then(
        (hold) => hold.release(), // the instance it joined, never a later one
        () => {}, // never held
      )
    },
  }
}
