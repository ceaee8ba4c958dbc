import { isDeepStrictEqual } from 'node:util'
import * as Y from 'yjs'
import { holdsWaiting } from './yjs-internals.js'

/** What a state holds, in brief: its state vector, and its delete set as an update of no structs. */
export interface HeldSummary {
  stateVector: Uint8Array
  deletions: Uint8Array
}

/**
 * `state`'s summary. Reads the whole state twice (about 90 ms a MB of text on the bench machine):
 * a big one is summarized on the slicer's worker thread (`summarizeState`).
 */
export function summaryOf(state: Uint8Array): HeldSummary {
  const stateVector = Y.encodeStateVectorFromUpdate(state)
  return { stateVector, deletions: Y.diffUpdate(state, stateVector) }
}

/**
 * Whether `doc`, which has applied the state `held` summarizes, holds nothing more: the same
 * structs (state vectors equal) and the same deletions (delete sets equal). Saving `doc` would then
 * store that state again.
 *
 * Both delete sets are compared as Yjs writes them, in an update holding no structs: clients
 * sorted, each client's adjacent ranges joined, so equal sets give equal bytes; an encoding that
 * differed anyway (a state with gaps, say) only makes this answer false: a save too many.
 * Anything waiting for a missing dependency also answers false.
 */
export function holdsOnly(doc: Y.Doc, held: HeldSummary): boolean {
  if (holdsWaiting(doc)) return false
  const stateVector = Y.encodeStateVector(doc)
  if (!isDeepStrictEqual(Y.decodeStateVector(stateVector), Y.decodeStateVector(held.stateVector)))
    return false
  return Buffer.compare(Y.encodeStateAsUpdate(doc, stateVector), held.deletions) === 0
}
