import * as encoding from 'lib0/encoding'

/**
 * Updates made of as many structs per byte as the Yjs v1 encoding allows, each of which a room
 * would keep as an object of its own (about 140–310 bytes of heap each, against 2–7 bytes on the
 * wire). Measured per kind (`npm run bench:attack` prints them):
 * - `gc-item`: one client's structs, a garbage-collected clock and a deleted item in turn (neither
 *   merges with the other): 4 bytes a struct.
 * - `split-deletes`: one string of n characters and a deletion of every other one: Yjs splits the
 *   string into n items, 3 bytes each.
 * - `client-per-struct`: a client of its own for every struct (a map entry and an array each).
 */
export type MinimalKind = 'gc-item' | 'split-deletes' | 'client-per-struct'
export const MINIMAL_KINDS: MinimalKind[] = ['gc-item', 'split-deletes', 'client-per-struct']

export interface MinimalSize {
  /** At most this many bytes. */
  bytes?: number
  /** About this many structs in the room once applied (when `bytes` is not given). */
  structs?: number
  /** Ids are drawn from here up, so repeated updates are new to the room; under 64 for `gc-item` and `split-deletes`. */
  client?: number
}

const DELETED = 1
const STRING = 4
const HAS_RIGHT_ORIGIN = 0x40
/** How often a generator checks its size, and what it may write in between. */
const CHECK_EVERY = 256
const MARGIN = CHECK_EVERY * 8 + 32

export function minimalUpdate(kind: MinimalKind, size: MinimalSize): Uint8Array {
  const bytes = size.bytes ?? Number.POSITIVE_INFINITY
  const structs = size.bytes === undefined ? (size.structs ?? 0) : Number.POSITIVE_INFINITY
  const client = size.client ?? 1
  switch (kind) {
    case 'gc-item':
      return gcItem(bytes, structs, client)
    case 'split-deletes':
      return splitDeletes(bytes, structs, client)
    case 'client-per-struct':
      return clientPerStruct(bytes, structs, client)
  }
}

/** A deleted item at the start of root array `a`, the first struct of a client's run. */
function writeRootItem(encoder: encoding.Encoder): void {
  encoding.writeUint8(encoder, DELETED)
  encoding.writeVarUint(encoder, 1) // the parent is a root type, by name
  encoding.writeVarString(encoder, 'a')
  encoding.writeVarUint(encoder, 1)
}

function gcItem(bytes: number, structs: number, client: number): Uint8Array {
  const body = encoding.createEncoder()
  writeRootItem(body)
  let count = 1
  let lastItem = 0
  for (let pair = 0; count + 2 <= structs; pair++) {
    if (pair % CHECK_EVERY === 0 && encoding.length(body) + MARGIN > bytes) break
    encoding.writeUint8(body, 0) // a GC struct of one clock
    encoding.writeVarUint(body, 1)
    encoding.writeUint8(body, HAS_RIGHT_ORIGIN | DELETED) // before the previous item: never merges
    encoding.writeVarUint(body, client)
    encoding.writeVarUint(body, lastItem)
    encoding.writeVarUint(body, 1)
    lastItem = count + 1
    count += 2
  }
  return oneClient(client, count, body, null)
}

function splitDeletes(bytes: number, structs: number, client: number): Uint8Array {
  // Each deleted character costs its own byte, its varint clock and a length byte; the kept one a byte.
  let length = Number.isFinite(structs) ? structs : Math.floor(bytes / 3)
  for (;;) {
    const body = encoding.createEncoder()
    encoding.writeUint8(body, STRING)
    encoding.writeVarUint(body, 1)
    encoding.writeVarString(body, 'a')
    encoding.writeVarString(body, 'x'.repeat(length))
    const deletions = encoding.createEncoder()
    encoding.writeVarUint(deletions, 1)
    encoding.writeVarUint(deletions, client)
    encoding.writeVarUint(deletions, Math.floor(length / 2))
    for (let clock = 1; clock < length; clock += 2) {
      encoding.writeVarUint(deletions, clock)
      encoding.writeVarUint(deletions, 1)
    }
    const update = oneClient(client, 1, body, deletions)
    if (update.length <= bytes) return update
    length = Math.floor((length * bytes) / update.length) - 16
  }
}

function clientPerStruct(bytes: number, structs: number, firstClient: number): Uint8Array {
  const body = encoding.createEncoder()
  let count = 0
  while (count < structs) {
    if (count % CHECK_EVERY === 0 && encoding.length(body) + MARGIN > bytes) break
    encoding.writeVarUint(body, 1) // one struct
    encoding.writeVarUint(body, firstClient + count)
    encoding.writeVarUint(body, 0) // from clock 0
    encoding.writeUint8(body, 0) // a GC struct of one clock
    encoding.writeVarUint(body, 1)
    count++
  }
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, count)
  encoding.writeUint8Array(update, encoding.toUint8Array(body))
  encoding.writeVarUint(update, 0) // no deletions
  return encoding.toUint8Array(update)
}

function oneClient(
  client: number,
  count: number,
  body: encoding.Encoder,
  deletions: encoding.Encoder | null,
): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, 1)
  encoding.writeVarUint(update, count)
  encoding.writeVarUint(update, client)
  encoding.writeVarUint(update, 0)
  encoding.writeUint8Array(update, encoding.toUint8Array(body))
  if (deletions) encoding.writeUint8Array(update, encoding.toUint8Array(deletions))
  else encoding.writeVarUint(update, 0)
  return encoding.toUint8Array(update)
}
