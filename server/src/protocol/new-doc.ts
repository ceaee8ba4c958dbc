import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'

/**
 * A new `Y.Doc`, its id drawn by Node's `randomUUID` (from a cached pool of randomness): Yjs's
 * own asks the kernel for randomness once per character, 145 µs a document against 6 here, which
 * every room load and every read of a stored state paid.
 */
export function newDoc(options: { gc?: boolean } = {}): Y.Doc {
  return new Y.Doc({ ...options, guid: randomUUID() })
}
