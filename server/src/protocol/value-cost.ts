/**
 * What decoding a JSON value builds on V8's heap beyond the bytes of its encoding, which the
 * document's charge already counts (`core/document-memory.ts`). Measured with `node --expose-gc`
 * on Node 20 and Yjs 13 (50,000 to 100,000 of each decoded from an update, heap after a
 * collection): `{}` 64 bytes, `[]` 35, `[1]` 183, a float 25, a short string 33, a small integer
 * 9 (its slot in the array or object holding it); keys of objects shaped alike share one hidden
 * class (8 bytes a key), 20,000 keys of one object 42 each.
 */
export const VALUE_COST = {
  /** Every value: its slot in the array, object or item holding it. */
  element: 8,
  object: 56,
  array: 32,
  /** A float, a bigint, or a string of more than one character (V8 caches one-character strings). */
  boxed: 16,
  /** A Uint8Array's object (its bytes are counted with the encoding). */
  bytes: 72,
} as const

/**
 * An array of `length` elements, besides their slots: lib0 builds it by pushing, and V8 gives a
 * pushed array room for 17 elements, then grows it by half and 16 (an array of 100 took 1,190
 * bytes, of 1,000 10,378).
 */
export function arrayCost(length: number): number {
  if (length === 0) return VALUE_COST.array
  const capacity = length <= 17 ? 17 : Math.ceil(1.3 * length + 16)
  return VALUE_COST.array + VALUE_COST.element * (capacity - length)
}

/** What the values read so far build: how many elements, and the bytes of heap they cost. */
export interface ValueTally {
  elements: number
  bytes: number
}

export function emptyTally(): ValueTally {
  return { elements: 0, bytes: 0 }
}

/** Counts one value of `extra` bytes (a `VALUE_COST` kind, or 0 for a scalar held in its slot). */
export function countValue(tally: ValueTally, extra: number): void {
  tally.elements++
  tally.bytes += VALUE_COST.element + extra
}

/**
 * What some Yjs structs build besides the item every struct is charged as: an embedded type's
 * object and maps (a document of 10,000 nested maps took 570 bytes per struct, against 210 for
 * typing), and a map entry's key and slot in its map (10,000 keys: 500 per struct).
 */
export const STRUCT_COST = { type: 400, mapEntry: 150 } as const
