import { ServerBusyError } from '../errors.js'
import type { ContentCost } from '../protocol/update-scan.js'
import type { MemoryCharges } from './memory-budget.js'

/**
 * What a loaded Yjs document costs, per struct and per byte of its encoding (its content, and the
 * encoding the room keeps for joiners), plus what its content builds beyond that (`builtBytes`:
 * JSON values, embedded types, map entries, counted by the update scan): measured with
 * `node --expose-gc` on Yjs 13, typing took 210 bytes of heap per struct besides its encoding,
 * 500,000 minimal structs 153 each, a text of 16 MB once its size; server/test/document-memory.test.ts
 * holds the whole estimate within 0.5–2 × the heap of random documents. An estimate: a struct
 * count is O(clients) to read, a heap's size per room is not readable at all. At the default
 * ceilings (500,000 structs, 64 MiB) and plain content it is 247 MiB, within the documents' share
 * of the default budget.
 */
const BYTES_PER_STRUCT = 250
const BYTES_PER_ENCODED_BYTE = 2

export function documentMemory(structs: number, encodedBytes: number, builtBytes = 0): number {
  return structs * BYTES_PER_STRUCT + encodedBytes * BYTES_PER_ENCODED_BYTE + builtBytes
}

/**
 * An edit growing a document by more than this is held to the documents' share like a big one,
 * whatever its size on the wire (200 KB of `{}` builds 6 MB): typing grows it by a few hundred.
 */
export const LARGE_GROWTH_BYTES = 1024 * 1024

/**
 * The documents' share reserved for a room as it loads, piece by piece (`applyInSlices`'s
 * `reserve`), so that rooms loading together are counted against each other, not each against the
 * share as it was before any of them; released once the room charges its document itself.
 */
export class LoadReservation {
  #reserved = 0

  constructor(private readonly memory: MemoryCharges) {}

  /** Reserves what a piece of the state costs; throws `ServerBusyError` (1013, 503) past the share. */
  readonly reserve = (cost: ContentCost & { bytes: number }): void => {
    const bytes = documentMemory(cost.structs, cost.bytes, cost.builtBytes)
    if (!this.memory.reserve('documents', bytes)) {
      throw new ServerBusyError("the server's memory for documents is full: retry later")
    }
    this.#reserved += bytes
  }

  release(): void {
    this.memory.charge('documents', -this.#reserved)
    this.#reserved = 0
  }
}

/** One room's document, charged to the server's memory budget (`documents`) by estimate. */
export class DocumentMemory {
  #charged = 0
  /** What it was charged when first counted: the document as it loaded. */
  #loaded: number | null = null
  #released = false

  constructor(private readonly memory: MemoryCharges) {}

  get bytes(): number {
    return this.#charged
  }

  /** How much more it is charged than when it loaded. */
  get grownBytes(): number {
    return Math.max(0, this.#charged - (this.#loaded ?? this.#charged))
  }

  /** Charges the estimate for a document of `structs` structs encoded in `encodedBytes`, building `builtBytes` more. */
  update(structs: number, encodedBytes: number, builtBytes: number): void {
    if (this.#released) return
    const estimate = documentMemory(structs, encodedBytes, builtBytes)
    this.memory.charge('documents', estimate - this.#charged)
    this.#charged = estimate
    this.#loaded ??= estimate
  }

  /**
   * Whether an edit adding `structs` in `bytes`, building `builtBytes` more, may grow the document
   * now. A big edit (`big`, applied in slices over several turns, or growing the document by more
   * than `LARGE_GROWTH_BYTES`) must fit the documents' share, and what it may add is charged at
   * once (the next `update` settles it); a small one, what the users of every room send, is
   * applied at once and charged by the `update` after it, and is refused only once the documents
   * hold the whole budget, so that one writer of large rooms does not stop everyone's typing: the
   * budget unloads the largest rooms meanwhile.
   */
  reserveGrowth(growth: { structs: number; bytes: number; builtBytes: number }, big: boolean): boolean {
    if (this.#released || growth.structs === 0) return true // deletions free memory, never refused
    const bytes = documentMemory(growth.structs, growth.bytes, growth.builtBytes)
    if (!big && bytes <= LARGE_GROWTH_BYTES) return this.memory.documents() !== 'full'
    if (!this.memory.reserve('documents', bytes)) return false
    this.#charged += bytes
    return true
  }

  /** The room unloaded: its document is no longer charged. */
  release(): void {
    if (this.#released) return
    this.memory.charge('documents', -this.#charged)
    this.#charged = 0
    this.#released = true
  }
}
