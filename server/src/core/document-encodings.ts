import * as Y from 'yjs'
import { boundedStateVector, encodeSyncStep2, isEmptyStateVector } from '../protocol/codec.js'
import { clientCount, holdsClient } from '../protocol/yjs-internals.js'
import { SyncAnswers } from './sync-answers.js'

/** Clients a state vector may name beyond those the room knows. */
const STATE_VECTOR_SLACK = 10_000

/**
 * A room document's encodings, kept until it changes: the whole state (a joiner that holds nothing,
 * most do, gets it without another encode, which costs O(document) on the event loop) and the
 * framed sync answers, shared by the joiners asking the same.
 */
export class DocumentEncodings {
  #state: Uint8Array | null = null
  readonly #answers = new SyncAnswers()

  /** `measured`: told the exact encoding each time one is made (the bounds' size is exact again). */
  constructor(
    private readonly doc: Y.Doc,
    private readonly measured: (state: Uint8Array) => void,
  ) {}

  /** The whole state, including updates still waiting for missing dependencies (so they count). */
  state(): Uint8Array {
    if (this.#state) return this.#state
    const state = Y.encodeStateAsUpdate(this.doc)
    this.#state = state
    this.measured(state)
    return state
  }

  /** Takes `state` as the encoding of the document as it is now, made elsewhere (off this thread). */
  adopt(state: Uint8Array): void {
    this.#state = state
    this.measured(state)
  }

  /** The document changed: what was encoded is stale. */
  changed(): void {
    this.#state = null
    this.#answers.clear()
  }

  /** What a holder of `stateVector` lacks, as one update. Throws `ProtocolError` for a bad vector. */
  diff(stateVector: Uint8Array): Uint8Array {
    return this.#diff(this.checked(stateVector))
  }

  /** The sync step 2 answering a `checked` state vector, shared by every joiner asking the same now. */
  syncAnswer(stateVector: Uint8Array): Uint8Array {
    return this.#answers.answer(stateVector, () => {
      const diff = this.#diff(stateVector)
      const answer = encodeSyncStep2(diff)
      // The answer ends with the whole state: keep that view of it rather than a second copy.
      if (diff === this.#state) this.#state = answer.subarray(answer.length - diff.length)
      return answer
    })
  }

  /**
   * `stateVector`, checked and bounded; throws `ProtocolError` for a bad one. A client knows at
   * most the clients the room knows, plus those whose updates the room never received:
   * `STATE_VECTOR_SLACK` of them is plenty, and a vector past that is refused.
   */
  checked(stateVector: Uint8Array): Uint8Array {
    if (isEmptyStateVector(stateVector)) return stateVector
    return boundedStateVector(stateVector, clientCount(this.doc) + STATE_VECTOR_SLACK, (client) =>
      holdsClient(this.doc, client),
    )
  }

  #diff(stateVector: Uint8Array): Uint8Array {
    if (isEmptyStateVector(stateVector)) return this.state()
    // Checked and decoded whole by then: whatever the encode throws is the server's fault.
    return Y.encodeStateAsUpdate(this.doc, stateVector)
  }
}
