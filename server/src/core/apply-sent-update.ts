import * as Y from 'yjs'
import { ProtocolError, SymphonyError } from '../errors.js'

/**
 * Applies an update a client (or a peer) sent. Yjs throws plain errors on bytes it cannot decode
 * or integrate: those are the sender's fault, a `ProtocolError`. Yjs then runs the document's
 * observers (the room's own listeners) when the transaction ends, outside this attribution: an
 * error there is a fault of the server's own and goes on as it is (the connection closes with
 * 1011 and the error is logged), never reported to the client as its protocol error.
 */
export function applySentUpdate(doc: Y.Doc, update: Uint8Array, origin: unknown): void {
  let sendersFault: unknown = null
  try {
    // An enclosing transaction: Yjs reads the update inside it, and ends it (observers) after.
    Y.transact(
      doc,
      () => {
        try {
          Y.applyUpdate(doc, update, origin)
        } catch (error) {
          sendersFault = error
          throw error
        }
      },
      origin,
      false,
    )
  } catch (error) {
    if (error !== sendersFault || error instanceof SymphonyError) throw error
    throw new ProtocolError(`could not apply the update: ${(error as Error).message}`, { cause: error })
  }
}
