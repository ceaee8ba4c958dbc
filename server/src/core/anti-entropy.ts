import { createHash } from 'node:crypto'
import * as Y from 'yjs'
import type { Digest } from '../protocol/codec.js'
import { encodedDeletions } from '../protocol/yjs-internals.js'

/**
 * Anti-entropy between servers holding one room: each now and then publishes a digest of its
 * document; a peer that holds more answers with the difference, and one that lacks something asks
 * back. So a pub/sub message lost by one server heals instead of leaving a permanent split.
 */
export function digestOf(doc: Y.Doc): Digest {
  return { stateVector: Y.encodeStateVector(doc), deleteSetHash: deleteSetHash(doc) }
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
  return createHash('sha256').update(encodedDeletions(doc)).digest().subarray(0, 16)
}
