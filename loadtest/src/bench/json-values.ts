import * as encoding from 'lib0/encoding'

const EMPTY_OBJECT = new Uint8Array([118, 0]) // lib0's `any`: an object of no keys

/**
 * An update setting `key` of the root map `map` to one JSON array of `elements` empty objects
 * (with `entries` > 1: keys `key0`, `key1`, ..., one item each), written by `client` at `clock`
 * (its previous writes hold clocks 0 to `clock` - 1), encoded directly: Yjs would build all the
 * objects first. A few bytes on the wire that build 64 bytes of heap each.
 */
export function arrayOfObjectsUpdate({
  elements,
  key = 'key',
  entries = 1,
  client = 7,
  clock = 0,
}: {
  elements: number
  key?: string
  entries?: number
  client?: number
  clock?: number
}): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 1) // one client
  encoding.writeVarUint(encoder, entries)
  encoding.writeVarUint(encoder, client)
  encoding.writeVarUint(encoder, clock)
  for (let entry = 0; entry < entries; entry++) {
    encoding.writeUint8(encoder, 8 | 0x20) // an item of JSON values, with a key
    encoding.writeVarUint(encoder, 1) // its parent is a root type...
    encoding.writeVarString(encoder, 'map') // ...named
    encoding.writeVarString(encoder, entries === 1 ? key : `${key}${entry}`)
    encoding.writeVarUint(encoder, 1) // one value
    encoding.writeUint8(encoder, 117) // an array
    encoding.writeVarUint(encoder, elements)
    for (let i = 0; i < elements; i++) encoding.writeUint8Array(encoder, EMPTY_OBJECT)
  }
  encoding.writeVarUint(encoder, 0) // no deletions
  return encoding.toUint8Array(encoder)
}
