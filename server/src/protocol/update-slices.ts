import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { type ClockRanges, rangesOf } from './held-content.js'
import { checkReservedWrites, type ServerParts } from './reserved-writes.js'
import { checkWhole, integrationOrder } from './update-guard.js'
import { type ContentCost, isGarbage, type ScannedUpdate, scanUpdate } from './update-scan.js'

/**
 * Cuts a (v1) update into a series of smaller updates that, applied in order, build the same
 * document: each slice holds at most `structsPerSlice` structs (a struct whose content builds much
 * weighing several, see `BUILT_BYTES_PER_STRUCT`; one heavier than a slice is a slice alone), ordered so that what a struct
 * points at (origin, right origin, parent) comes in an earlier slice or the same one, and the
 * deletions come last. A big snapshot can then be applied a slice per event-loop turn instead of
 * in one transaction that stalls every other room. Structs that would wait for a client the state
 * lacks come after the rest (Yjs parks them as pending), and a state with a gap is left whole: Yjs
 * would re-merge its pending structs on every later slice. Also says what the whole update costs
 * a document (`ContentCost`), read in the same pass. Throws on an update that cannot be read.
 */
export function sliceUpdate(
  update: Uint8Array,
  structsPerSlice: number,
): { slices: Uint8Array[]; cost: ContentCost } {
  // A stored state is never refused for its items: it was taken once.
  const scanned = scanUpdate(update, { maxItemElements: Number.POSITIVE_INFINITY })
  const cost = { structs: scanned.structCount, builtBytes: scanned.builtBytes }
  if ([...scanned.structs.values()].some((run) => run.some((struct) => struct.gap))) {
    return { slices: [update], cost }
  }
  const order = integrationOrder(scanned, () => 0)
  return { slices: sliceInOrder(update, scanned, order, structsPerSlice), cost }
}

/** A client's big update, checked (`checkWhole`) and cut: its slices, and the most structs it adds to the room. */
export interface CutUpdate {
  slices: Uint8Array[]
  structs: number
  /** The clock ranges of the whole update, and of each slice: what the room compares with what it holds. */
  ranges: ClockRanges
  sliceRanges: ClockRanges[]
  /** What it holds under the server's client ids (`checkReservedWrites`). */
  server: ServerParts
  /** What its content builds on the heap besides its structs and bytes (`ScannedUpdate.builtBytes`). */
  builtBytes: number
}

/**
 * Checks that a client's update integrates whole against a room whose history reaches
 * `stateVector`, adds at most `maxStructs` structs and writes none of the server's parts
 * (`checkReservedWrites`), then cuts it. Reads the update once and
 * builds none of its structs: a slice copies their bytes (a run of garbage-collected structs is
 * written as one). Throws `ProtocolError`, `PendingLimitError` or `DocumentTooLargeError`.
 */
export function checkAndCut(
  update: Uint8Array,
  stateVector: Uint8Array,
  maxStructs: number,
  structsPerSlice: number,
): CutUpdate {
  const reached = Y.decodeStateVector(stateVector)
  const stateOf = (client: number) => reached.get(client) ?? 0
  const scanned = scanUpdate(update, { maxStructs })
  const { order, structs } = checkWhole(scanned, stateOf, maxStructs)
  const server = checkReservedWrites(scanned)
  const sliceRanges: ClockRanges[] = []
  const slices = sliceInOrder(update, scanned, order, structsPerSlice, sliceRanges)
  return { slices, structs, ranges: rangesOf(scanned), sliceRanges, server, builtBytes: scanned.builtBytes }
}

/**
 * Slices of the update's structs in `order` (runs [client, from, to, ...]), then of its deletions;
 * each slice's clock ranges go to `sliceRanges` when given.
 */
function sliceInOrder(
  update: Uint8Array,
  scanned: ScannedUpdate,
  order: number[],
  structsPerSlice: number,
  sliceRanges?: ClockRanges[],
): Uint8Array[] {
  const slices: Uint8Array[] = []
  /** This slice's structs: each client's run of them, by index (consecutive, as `order` goes through each run in turn). */
  let runs = new Map<number, { from: number; to: number }>()
  let count = 0
  const flush = () => {
    slices.push(encodeStructs(update, scanned, runs))
    sliceRanges?.push(clockRangesOf(scanned, runs))
    runs = new Map()
    count = 0
  }
  for (let i = 0; i < order.length; i += 3) {
    const client = order[i] as number
    const structs = scanned.structs.get(client) ?? []
    for (let at = order[i + 1] as number, to = order[i + 2] as number; at < to; at++) {
      // A struct whose content builds much (a JSON value of many elements) weighs as many structs.
      const weight = 1 + Math.floor((structs[at]?.built ?? 0) / BUILT_BYTES_PER_STRUCT)
      if (count > 0 && count + weight > structsPerSlice) flush()
      const run = runs.get(client)
      if (run) run.to = at + 1
      else runs.set(client, { from: at, to: at + 1 })
      count += weight
    }
  }
  if (count > 0) flush()
  for (const ranges of deletionChunks(scanned.deletions, structsPerSlice * DELETED_CLOCKS_PER_STRUCT)) {
    slices.push(encodeDeletions(ranges))
    sliceRanges?.push(new Map())
  }
  return slices
}

/** The clocks a slice's runs of structs cover (an update checked whole has no gaps). */
function clockRangesOf(scanned: ScannedUpdate, runs: Map<number, { from: number; to: number }>): ClockRanges {
  const ranges: ClockRanges = new Map()
  for (const [client, { from, to }] of runs) {
    const run = scanned.structs.get(client) ?? []
    const last = run[to - 1]
    if (run[from] && last) ranges.set(client, [run[from].clock, last.clock + last.length])
  }
  return ranges
}

/** About what integrating one struct builds: content building this much more weighs one struct more. */
const BUILT_BYTES_PER_STRUCT = 250
/** A deleted clock costs less than a struct: one struct may span many clocks. */
const DELETED_CLOCKS_PER_STRUCT = 8
const GC = 0

/** One client per run (a client listed twice would replace its first run), its structs' bytes as they came. */
function encodeStructs(
  update: Uint8Array,
  scanned: ScannedUpdate,
  runs: Map<number, { from: number; to: number }>,
): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, runs.size)
  for (const [client, { from, to }] of runs) {
    const structs = scanned.structs.get(client) ?? []
    encoding.writeVarUint(encoder, to - from)
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, structs[from]?.clock ?? 0)
    for (const struct of structs.slice(from, to)) {
      if (isGarbage(struct)) {
        encoding.writeUint8(encoder, GC)
        encoding.writeVarUint(encoder, struct.length)
      } else {
        encoding.writeUint8Array(encoder, update.subarray(struct.start, struct.start + struct.bytes))
      }
    }
  }
  encoding.writeVarUint(encoder, 0) // no deletions
  return encoding.toUint8Array(encoder)
}

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
function deletionChunks(deletions: Map<number, number[]>, clocksPerChunk: number): DeletedRange[][] {
  const chunks: DeletedRange[][] = []
  let chunk: DeletedRange[] = []
  let room = clocksPerChunk
  for (const [client, ranges] of deletions) {
    for (let i = 0; i < ranges.length; i += 2) {
      const start = ranges[i] as number
      for (let clock = start, end = start + (ranges[i + 1] as number); clock < end; ) {
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

function encodeDeletions(ranges: DeletedRange[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 0) // no structs
  const clients = new Map<number, DeletedRange[]>()
  for (const range of ranges) {
    const list = clients.get(range.client)
    if (list) list.push(range)
    else clients.set(range.client, [range])
  }
  encoding.writeVarUint(encoder, clients.size)
  for (const [client, items] of clients) {
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, items.length)
    for (const { clock, len } of items) {
      encoding.writeVarUint(encoder, clock)
      encoding.writeVarUint(encoder, len)
    }
  }
  return encoding.toUint8Array(encoder)
}
