import * as encoding from 'lib0/encoding'

/** One string value set on a key of a root Y.Map, as `map.set(key, value)` makes it. */
export interface MapEntry {
  key: string
  value: string
  /** The item holding the key's current value, which the new one replaces (and deletes); null: a new key. */
  replaces: { client: number; clock: number; length: number } | null
}

// Yjs' v1 encoding of an item (`Item.write`): its info byte, then what the bits announce.
const CONTENT_ANY = 8
const HAS_ORIGIN = 0x80
const HAS_PARENT_SUB = 0x20

/**
 * The v1 update that sets `entries` on the root map `root`, written by `client` from `clock` on:
 * byte for byte what Yjs makes of `map.set` in a transaction of that client's
 * (`map-entries.test.ts` compares). Made without a document, so the server can journal it before
 * any document holds it.
 */
export function encodeMapEntries(
  root: string,
  client: number,
  clock: number,
  entries: MapEntry[],
): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, entries.length > 0 ? 1 : 0)
  if (entries.length > 0) {
    encoding.writeVarUint(encoder, entries.length)
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, clock)
    for (const { key, value, replaces } of entries) {
      if (replaces) {
        // The previous value is the origin; the parent and the key follow from it.
        encoding.writeUint8(encoder, CONTENT_ANY | HAS_ORIGIN | HAS_PARENT_SUB) // the key itself is not written
        encoding.writeVarUint(encoder, replaces.client)
        encoding.writeVarUint(encoder, replaces.clock + replaces.length - 1)
      } else {
        encoding.writeUint8(encoder, CONTENT_ANY | HAS_PARENT_SUB)
        encoding.writeVarUint(encoder, 1) // the parent is a root type, named
        encoding.writeVarString(encoder, root)
        encoding.writeVarString(encoder, key)
      }
      encoding.writeVarUint(encoder, 1)
      encoding.writeAny(encoder, value)
    }
  }
  writeDeletions(encoder, entries)
  return encoding.toUint8Array(encoder)
}

/** The replaced items, deleted: per client (highest first, as Yjs orders them), ranges in clock order. */
function writeDeletions(encoder: encoding.Encoder, entries: MapEntry[]): void {
  const byClient = new Map<number, [number, number][]>()
  for (const { replaces } of entries) {
    if (!replaces) continue
    const ranges = byClient.get(replaces.client) ?? []
    ranges.push([replaces.clock, replaces.length])
    byClient.set(replaces.client, ranges)
  }
  encoding.writeVarUint(encoder, byClient.size)
  for (const [client, ranges] of [...byClient].sort((a, b) => b[0] - a[0])) {
    ranges.sort((a, b) => a[0] - b[0])
    const merged: [number, number][] = []
    for (const [clock, length] of ranges) {
      const last = merged[merged.length - 1]
      if (last && last[0] + last[1] === clock) last[1] += length
      else merged.push([clock, length])
    }
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, merged.length)
    for (const [clock, length] of merged) {
      encoding.writeVarUint(encoder, clock)
      encoding.writeVarUint(encoder, length)
    }
  }
}
