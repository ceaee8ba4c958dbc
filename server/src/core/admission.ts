import { CloseCode } from '@symphony/client/wire'
import { RoomMovedError, ServerBusyError } from '../errors.js'
import { encodeIncarnation } from '../protocol/codec.js'
import type { Connection } from './connection.js'
import { type RetryLater, roomKey } from './pacing.js'
import type { RoomManager } from './room-manager.js'
import type { JoinWaitObserver, JoinWaitOutcome } from './room-waits.js'

/** A connection's stay in its room, from the socket opening to its closing. */
export interface Admission {
  /** Settles once the connection joined the loaded room, or was closed because it could not load. */
  joined: Promise<void>
  /** The socket closed: leave the room and release the hold on it (once; later calls do nothing). */
  leave(): void
}

export interface AdmissionOptions {
  /** The longest the connection waits for its room to load; then it is closed with TryAgainLater. */
  joinWaitMs: number
  waits?: JoinWaitObserver
  /** Told of a room refused as busy (no memory for it): its joiners wait before coming back. */
  retryLater?: Pick<RetryLater, 'refused'>
  /**
   * Another server owns the room (its load found it owned elsewhere): the connection is handed to
   * this instead of closed (`Connection.handOver`). Unset: it is closed with TryAgainLater.
   */
  onMoved?: () => void
}

/** The reason a client whose wait ran out is closed with (1013): it reconnects and joins the load still going. */
export const joinWaitExpiredReason = (joinWaitMs: number) =>
  `the room did not load within ${joinWaitMs} ms; retry`

/** Why a wait was ended before the room loaded. */
class WaitEnded extends Error {
  constructor(readonly outcome: 'expired' | 'left') {
    super(outcome === 'expired' ? 'the join wait ran out' : 'the client left')
  }
}

/**
 * Holds `connection`'s room and joins it once loaded: frames that arrive meanwhile wait in the
 * connection. A slow or failing load keeps it waiting (the load retries while anyone waits) until
 * its own `joinWaitMs` runs out: then it is closed with TryAgainLater, and its reconnection joins
 * the load still going. A room refused outright (the memory budget) closes it at once.
 */
export function admit(
  rooms: Pick<RoomManager, 'acquire'>,
  connection: Connection,
  { joinWaitMs, waits, retryLater, onMoved }: AdmissionOptions,
): Admission {
  const started = performance.now()
  const wait = new AbortController()
  let waiting = true
  const endWait = (outcome: JoinWaitOutcome) => {
    if (!waiting) return
    waiting = false
    clearTimeout(timer)
    waits?.ended(outcome, (performance.now() - started) / 1000)
  }
  waits?.started()
  const timer = setTimeout(() => wait.abort(new WaitEnded('expired')), joinWaitMs)
  timer.unref()
  const acquired = rooms.acquire(connection.roomName, wait.signal)
  const joined = acquired.then(
    (hold) => {
      endWait('joined')
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
    (error) => {
      if (error instanceof WaitEnded) {
        endWait(error.outcome)
        if (error.outcome === 'expired')
          connection.close(CloseCode.TryAgainLater, joinWaitExpiredReason(joinWaitMs))
        return
      }
      endWait('refused')
      if (error instanceof RoomMovedError && onMoved) {
        onMoved()
        return
      }
      if (error instanceof ServerBusyError) retryLater?.refused(roomKey(connection.roomName))
      connection.close(
        CloseCode.TryAgainLater,
        error instanceof ServerBusyError ? error.message : 'the room could not be loaded; retry',
      )
    },
  )
  let left = false
  return {
    joined,
    leave() {
      if (left) return
      left = true
      connection.detach()
      wait.abort(new WaitEnded('left')) // nothing once joined: the hold is released below
      acquired.then(
        (hold) => hold.release(), // the instance it joined, never a later one
        () => {}, // never held
      )
    },
  }
}
