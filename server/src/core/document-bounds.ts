import type * as Y from 'yjs'
import { DocumentTooLargeError, ServerBusyError } from '../errors.js'
import { type ContentCost, contentCostOf, STRUCTS_PER_BYTE } from '../protocol/update-scan.js'
import { documentStructs } from '../protocol/update-structs.js'
import { DocumentMemory } from './document-memory.js'
import type { MemoryCharges } from './memory-budget.js'

export interface DocumentCeilings {
  maxDocumentBytes: number
  /** Structs the document may hold, a client counting as `CLIENT_STRUCTS` (see `RoomOptions`). */
  maxDocumentStructs: number
}

export interface DocumentBoundsInit {
  doc: Y.Doc
  /** Bytes of the loaded state and replayed updates: the first upper bound of the encoding. */
  loadedBytes: number
  /** What their content builds on the heap besides structs and bytes (`contentCostOf`). */
  loadedBuiltBytes: number
  ceilings: DocumentCeilings
  memory: MemoryCharges
  /** The document's encoding now (the room's, cached per version): its exact size when one is needed. */
  encode(): Uint8Array
}

/** What a big update applied over several turns holds reserved until it is done. */
export type BigReservation = Pick<ContentCost, 'structs' | 'builtBytes'>

/**
 * A room's document, bounded and charged: upper bounds of its encoded size, its structs and what
 * its content builds, kept as changes are applied (so the ceilings rarely need an encode or a
 * count), and charged to the server's memory budget by estimate (`DocumentMemory`). Big updates
 * reserve their share while they are applied over several turns.
 */
export class DocumentBounds {
  /** An upper bound of the encoded size. */
  #size: number
  /** An upper bound of the structs and clients (`documentStructs`): a change adds at most `STRUCTS_PER_BYTE` per byte. */
  #structs: number
  /** The struct bound when last counted exactly: it is counted again once it drifts too far. */
  #structsCounted: number
  /**
   * An upper bound of what the content builds besides structs and bytes: every change adds its
   * own; exact again when a deletion (which may free values) is followed by an encode.
   */
  #built: number
  /** A deletion was applied since `#built` was last exact. */
  #builtStale = false
  /** Of big updates reserved and not all applied yet: a count or an encode does not drop them. */
  #big = { bytes: 0, structs: 0, builtBytes: 0 }
  readonly #memory: DocumentMemory
  readonly #doc: Y.Doc
  readonly #ceilings: DocumentCeilings
  readonly #encode: () => Uint8Array

  constructor({ doc, loadedBytes, loadedBuiltBytes, ceilings, memory, encode }: DocumentBoundsInit) {
    this.#doc = doc
    this.#ceilings = ceilings
    this.#encode = encode
    this.#size = loadedBytes
    this.#structs = documentStructs(doc)
    this.#structsCounted = this.#structs
    this.#built = loadedBuiltBytes
    this.#memory = new DocumentMemory(memory)
    this.#charge()
  }

  /** The encoded size when last measured, plus every update applied since. */
  get size(): number {
    return this.#size
  }

  /** What the document is charged. */
  get heldBytes(): number {
    return this.#memory.bytes
  }

  /** How much the charge grew since the room loaded. */
  get grownBytes(): number {
    return this.#memory.grownBytes
  }

  /** A change of `bytes` that builds `built` was applied; the struct bound is counted again once it drifts an eighth. */
  changed(bytes: number, built: number): void {
    this.#size += bytes
    this.#built += built
    this.#structs += bytes * STRUCTS_PER_BYTE
    // Counted again (O(clients), and a document of C clients counts 8C) once it drifts an eighth,
    // or 64, past the last count: O(1) per struct added, and 16 KB overcharged at most past an eighth.
    if (this.#structs - this.#structsCounted > Math.max(64, this.#structsCounted / 8)) this.countStructs()
    else this.#charge()
  }

  /** A transaction deleted something: what the content builds is exact again only after an encode. */
  deleted(): void {
    this.#builtStale = true
  }

  /** `state` is the document's encoding now: its size is exact again, and after deletions what it builds. */
  measured(state: Uint8Array): void {
    this.#size = state.length + this.#big.bytes
    if (this.#builtStale) {
      // O(document), as the encode just was; only after deletions, which may have freed values.
      this.#built = contentCostOf(state).builtBytes + this.#big.builtBytes
      this.#builtStale = false
    }
    this.#charge()
  }

  /** Refuses an update that could push the document past its bytes, measured exactly if close. */
  ensureRoomFor(updateBytes: number): void {
    const max = this.#ceilings.maxDocumentBytes
    if (this.#size + updateBytes <= max) return
    // Measured exactly: a big update still being applied counts whole, as in the bound.
    if (this.#encode().length + this.#big.bytes + updateBytes <= max) return
    throw new DocumentTooLargeError(`document would exceed ${max} bytes`)
  }

  /** Refuses an update that could give the document more than its structs, counted exactly if close. */
  ensureStructsFor(structs: number): void {
    const max = this.#ceilings.maxDocumentStructs
    if (this.#structs + structs <= max) return
    if (this.countStructs() + structs <= max) return
    throw new DocumentTooLargeError(`document would exceed ${max} structs`)
  }

  /**
   * Refuses (`ServerBusyError`) growth the loaded documents have no memory for
   * (`DocumentMemory.reserveGrowth`); the budget meanwhile unloads the largest rooms.
   */
  ensureMemoryFor(growth: { structs: number; bytes: number; builtBytes: number }, big: boolean): void {
    if (this.#memory.reserveGrowth(growth, big)) return
    throw new ServerBusyError("the server's memory for documents is full: the edit is refused; retry later")
  }

  /** The structs and clients, counted (O(clients)); the bound is exact again after. */
  countStructs(): number {
    this.#structs = documentStructs(this.#doc) + this.#big.structs
    this.#structsCounted = this.#structs
    this.#charge()
    return this.#structs
  }

  /** Structs the document may still take. */
  structsLeft(): number {
    return this.#ceilings.maxDocumentStructs - this.countStructs()
  }

  /** A big update of `bytes` waits and is applied: its bytes count in the bound until `releaseBigBytes`. */
  reserveBigBytes(bytes: number): void {
    this.#big.bytes += bytes
    this.#size += bytes
  }

  releaseBigBytes(bytes: number): void {
    this.#big.bytes -= bytes
    this.#size -= bytes
    this.countStructs() // what was reserved for it (counted again by its slices): settled
  }

  /** Its content, checked and cut: reserved while its slices are applied over several turns. */
  reserveBigContent({ structs, builtBytes }: BigReservation): void {
    this.#big.structs += structs
    this.#structs += structs
    this.#big.builtBytes += builtBytes
    this.#built += builtBytes
  }

  releaseBigContent({ structs, builtBytes }: BigReservation): void {
    this.#big.structs -= structs
    this.#big.builtBytes -= builtBytes
  }

  /** The room is freed: its charge goes. */
  release(): void {
    this.#memory.release()
  }

  #charge(): void {
    this.#memory.update(this.#structs, this.#size, this.#built)
  }
}
