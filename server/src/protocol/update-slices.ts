import * as encoding from 'lib0/encoding'
import * as map from 'lib0/map'
import * as Y from 'yjs'

type Struct = Y.Item | Y.GC | Y.Skip
type DeleteSet = ReturnType<typeof Y.decodeUpdate>['ds']

/**
 * Cuts a (v1) update into a series of smaller updates that, applied in order, build the same
 * document: each slice holds at most `structsPerSlice` structs, ordered so that what a struct
 * points at (origin, right origin, parent) comes in an earlier slice or the same one, and the
 * deletions come last. A big snapshot can then be applied a slice per event-loop turn instead of
 * in one transaction that stalls every other room. Yjs still parks anything out of order as
 * pending, so the order is a matter of speed, not of correctness.
 */
export function sliceUpdate(update: Uint8Array, structsPerSlice: number): Uint8Array[] {
  const { structs, ds } = Y.decodeUpdate(update)
  // A gap (a Skip) means structs that will wait for what is missing: Yjs re-merges its whole
  // pending update on every later slice, so slicing such a state would cost far more than it saves.
  if (structs.some((struct) => struct instanceof Y.Skip)) return [update]
  const ordered = causalOrder(byClient(structs))
  const slices: Uint8Array[] = []
  for (let start = 0; start < ordered.length; start += structsPerSlice) {
    slices.push(encodeStructs(ordered.slice(start, start + structsPerSlice)))
  }
  for (const ranges of deletionChunks(ds, structsPerSlice * DELETED_CLOCKS_PER_STRUCT)) {
    slices.push(encodeDeletions(ranges))
  }
  return slices
}

/** A deleted clock costs less than a struct: one struct may span many clocks. */
const DELETED_CLOCKS_PER_STRUCT = 8

interface DeletedRange {
  client: number
  clock: number
  len: number
}

/**
 * The deletions in chunks of at most `clocksPerChunk` clocks, long ranges cut to fit. A cut may
 * split a deleted emoji's two UTF-16 halves: harmless with Yjs's default `gc: true`, which drops
 * deleted content, but a document kept with `gc: false` would see the halves replaced.
 */
function deletionChunks(ds: DeleteSet, clocksPerChunk: number): DeletedRange[][] {
  const chunks: DeletedRange[][] = []
  let chunk: DeletedRange[] = []
  let room = clocksPerChunk
  for (const [client, items] of ds.clients) {
    for (const item of items) {
      for (let clock = item.clock, end = item.clock + item.len; clock < end; ) {
        const len = Math.min(end - clock, room)
        chunk.push({ client, clock, len })
        clock += len
        room -= len
        if (room === 0) {
          chunks.push(chunk)
          chunk = []
          room = clocksPerChunk
        }
      }
    }
  }
  if (chunk.length > 0) chunks.push(chunk)
  return chunks
}

function byClient(structs: Struct[]): Map<number, Struct[]> {
  const clients = new Map<number, Struct[]>()
  for (const struct of structs) map.setIfUndefined(clients, struct.id.client, (): Struct[] => []).push(struct)
  for (const list of clients.values()) list.sort((a, b) => a.id.clock - b.id.clock)
  return clients
}

/**
 * Every client's structs in clock order, each preceded by the structs of other clients it
 * points at. A depth-first walk with an explicit stack, so a long chain cannot overflow.
 */
function causalOrder(clients: Map<number, Struct[]>): Struct[] {
  const next = new Map<number, number>([...clients.keys()].map((client) => [client, 0]))
  const ordered: Struct[] = []
  const onStack = new Set<Struct>()
  /** The next unplaced struct of `id`'s client if `id` is not placed yet. */
  const unplaced = (id: Y.ID | null): Struct | null => {
    if (id === null) return null
    const list = clients.get(id.client)
    const at = next.get(id.client) ?? 0
    const head = list?.[at]
    return head && head.id.clock <= id.clock ? head : null
  }
  for (const [client, list] of clients) {
    while ((next.get(client) ?? 0) < list.length) {
      const stack = [list[next.get(client) ?? 0] as Struct]
      onStack.add(stack[0] as Struct)
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as Struct
        const needed = dependencies(top)
          .map(unplaced)
          .find((dep) => dep !== null && dep !== top && !onStack.has(dep))
        if (needed) {
          stack.push(needed)
          onStack.add(needed)
          continue
        }
        stack.pop()
        onStack.delete(top)
        if (unplaced(top.id) === top) {
          ordered.push(top)
          next.set(top.id.client, (next.get(top.id.client) ?? 0) + 1)
        }
      }
    }
  }
  return ordered
}

function dependencies(struct: Struct): (Y.ID | null)[] {
  if (!(struct instanceof Y.Item)) return []
  const parent = struct.parent instanceof Y.ID ? struct.parent : null
  return [struct.origin, struct.rightOrigin, parent]
}

function encodeStructs(structs: Struct[]): Uint8Array {
  const encoder = new Y.UpdateEncoderV1()
  const clients = byClient(structs) // one run per client: a client listed twice would replace its first run
  encoding.writeVarUint(encoder.restEncoder, clients.size)
  for (const [client, list] of clients) {
    encoding.writeVarUint(encoder.restEncoder, list.length)
    encoder.writeClient(client)
    encoding.writeVarUint(encoder.restEncoder, (list[0] as Struct).id.clock)
    for (const struct of list) struct.write(encoder, 0)
  }
  encoding.writeVarUint(encoder.restEncoder, 0) // no deletions
  return encoder.toUint8Array()
}

function encodeDeletions(ranges: DeletedRange[]): Uint8Array {
  const encoder = new Y.UpdateEncoderV1()
  encoding.writeVarUint(encoder.restEncoder, 0) // no structs
  const clients = new Map<number, DeletedRange[]>()
  for (const range of ranges) map.setIfUndefined(clients, range.client, (): DeletedRange[] => []).push(range)
  encoding.writeVarUint(encoder.restEncoder, clients.size)
  for (const [client, items] of clients) {
    encoder.resetDsCurVal()
    encoding.writeVarUint(encoder.restEncoder, client)
    encoding.writeVarUint(encoder.restEncoder, items.length)
    for (const { clock, len } of items) {
      encoder.writeDsClock(clock)
      encoder.writeDsLen(len)
    }
  }
  return encoder.toUint8Array()
}
