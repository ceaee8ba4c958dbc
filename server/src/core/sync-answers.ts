import { isEmptyStateVector } from '../protocol/codec.js'

/**
 * A room's sync answers (framed sync steps 2) for its current version, so clients that ask with
 * the same state vector share one buffer: the joiners that hold nothing (most do), and the last
 * other vector asked (a room's clients reconnecting together, after a restart, all hold the same).
 * The transport queues a big answer without copying it, so N joiners cost one answer, not N.
 */
export class SyncAnswers {
  #empty: Uint8Array | null = null
  #last: { vector: Uint8Array; answer: Uint8Array } | null = null

  /** The answer to `vector` for the room as it is now, built by `encode` if not kept. */
  answer(vector: Uint8Array, encode: () => Uint8Array): Uint8Array {
    if (isEmptyStateVector(vector)) {
      this.#empty ??= encode()
      return this.#empty
    }
    if (this.#last && Buffer.compare(this.#last.vector, vector) === 0) return this.#last.answer
    const answer = encode()
    // Copied: the vector is a view into the request, which the cache must not keep.
    this.#last = { vector: vector.slice(), answer }
    return answer
  }

  /** The room changed: every kept answer is out of date. */
  clear(): void {
    this.#empty = null
    this.#last = null
  }
}
