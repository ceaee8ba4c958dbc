import { createHash } from 'node:crypto'
import * as Y from 'yjs'
import type { Digest } from '../protocol/codec.js'
import { encodedDeletions, holdsWaiting } from '../protocol/yjs-internals.js'

/**
 * Anti-entropy between servers holding one room: each now and then publishes a digest of its
 * document; a peer that holds more answers with the difference, and one that lacks something asks
 * back. So a pub/sub message lost by one server heals instead of leaving a permanent split.
 */
export function digestOf(doc: Y.Doc): Digest {
  return { stateVector: Y.encodeStateVector(doc), deleteSetHash: deleteSetHash(doc) }
}

/**
 * The digest of the document a stored `state` builds, read from its bytes: the same as `digestOf`
 * that document. Reads the whole state twice (about 90 ms a MB of text on the bench machine), so a
 * big one is read on the slicer's worker thread (`digestOfStored`).
 */
export function digestOfState(state: Uint8Array): Digest {
  const stateVector = Y.encodeStateVectorFromUpdate(state)
  // Beyond its own state vector, an update holds no structs: only its delete set.
  const { ds } = Y.decodeUpdate(Y.diffUpdate(state, stateVector))
  return { stateVector, deleteSetHash: hashOf(Y.encodeSnapshot(Y.createSnapshot(ds, new Map()))) }
}

/**
 * Whether `doc`, which has applied the copy `stored` describes, holds nothing more (saving it would
 * store that copy again). Anything waiting for a missing dependency answers false.
 */
export function holdsNothingBeyond(doc: Y.Doc, stored: Digest): boolean {
  return !holdsWaiting(doc) && !compareDigest(digestOf(doc), stored).peerLacks
}

export interface DigestComparison {
  /** We hold structs or deletions the peer lacks: publish the difference. */
  peerLacks: boolean
  /** The peer holds structs or deletions we lack: publish our digest so it answers. */
  weLack: boolean
}

export function compareDigest(ourDigest: Digest, theirs: Digest): DigestComparison {
  const ours = Y.decodeStateVector(ourDigest.stateVector)
  const their = Y.decodeStateVector(theirs.stateVector)
  const ahead = (a: Map<number, number>, b: Map<number, number>) =>
    [...a].some(([client, clock]) => (b.get(client) ?? 0) < clock)
  // Deletions do not move the state vector, so they are compared by hash; a mismatch means both
  // sides send what they have and the union wins.
  const deletesDiffer = Buffer.compare(ourDigest.deleteSetHash, theirs.deleteSetHash) !== 0
  return { peerLacks: ahead(ours, their) || deletesDiffer, weLack: ahead(their, ours) || deletesDiffer }
}

/**
 * A hash of the document's integrated deletions only. Pending structs (updates still waiting for
 * a dependency) are left out: their encoding depends on arrival order, so two servers holding the
 * same updates could otherwise never agree.
 */
function deleteSetHash(doc: Y.Doc): Uint8Array {
  return hashOf(encodedDeletions(doc))
}

function hashOf(deletions: Uint8Array): Uint8Array {
  return createHash('sha256').update(deletions).digest().subarray(0, 16)
}
