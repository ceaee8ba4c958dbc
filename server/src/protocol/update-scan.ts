import { isUtf8 } from 'node:buffer'
import * as decoding from 'lib0/decoding'
import { DocumentTooLargeError, ProtocolError } from '../errors.js'
import { jsonTextProblem } from './json-text.js'
import { arrayCost, countValue, emptyTally, STRUCT_COST, VALUE_COST, type ValueTally } from './value-cost.js'

/** Deepest nesting of JSON values in an update or a presence state. */
export const MAX_JSON_DEPTH = 64

/**
 * The most JSON elements (objects, arrays, strings, numbers, each nested one counted) one item of
 * a client's update may hold: an item is integrated whole, in one turn, so this bounds the turn
 * (200,000 `{}` decode in about 20 ms) and what one item builds (about 13 MB).
 */
export const MAX_ITEM_VALUE_ELEMENTS = 200_000

const MAX_CLOCK = Number.MAX_SAFE_INTEGER

/** One struct of an update, as far as integrating it depends on others. */
export interface ScannedStruct {
  clock: number
  length: number
  /** A Skip: a gap the update leaves in its client's run, holding nothing. */
  gap: boolean
  /** Other clients' ids it needs to integrate, as [client, clock, client, clock, ...]. */
  needs: number[]
  /** Where its encoding starts in the update. */
  start: number
  /** Its encoded size: what it costs to keep if it has to wait. */
  bytes: number
  /** What decoding its content builds on the heap besides its bytes and its item (`VALUE_COST`). */
  built: number
  /** `NO_CONTENT` for GC structs and gaps. */
  content?: typeof NO_CONTENT
}

/**
 * What a client costs a document, in structs: its map entry and array hold about four structs'
 * worth, and every transaction of the room reads each client's state twice (Yjs' state vectors:
 * with a quarter million clients, 42 ms per slice of a big update, and a peak of 680 MB).
 */
export const CLIENT_STRUCTS = 8

/**
 * The most structs (`CLIENT_STRUCTS` for a client) an update adds per byte it spends: a new
 * client and its struct take 5 bytes at least, a struct or a cut 1.
 */
export const STRUCTS_PER_BYTE = Math.ceil((CLIENT_STRUCTS + 1) / 5)

/** Shared by every struct that refers to no other client, so none allocates an array. */
const NEEDS_NOTHING: number[] = []
const NO_CONTENT = Symbol('no content')

export interface ScannedUpdate {
  /** Each client's structs, in clock order. */
  structs: Map<number, ScannedStruct[]>
  /** Each client's deleted ranges, as [clock, length, clock, length, ...]. */
  deletions: Map<number, number[]>
  /**
   * Where integrating the update may cut an existing struct in two, as [client, clock, ...]: a
   * cut before `clock` (after an origin, before a right origin, at either end of a deleted range).
   * Cuts the scan can see fall between two structs of the update are left out.
   */
  cuts: number[]
  /** The clients with a struct that names `AUTHORS_ROOT` as its parent. */
  authorsRootWriters: Set<number>
  /** What applying it builds on the heap besides its structs and bytes: the sum of its structs' `built`. */
  builtBytes: number
  /** Its structs (a run of GC structs or gaps counted once) and `CLIENT_STRUCTS` for each client. */
  structCount: number
}

/** What an update costs a document it is applied to, besides its bytes (`core/document-memory.ts`). */
export interface ContentCost {
  structs: number
  builtBytes: number
}

/** The root type the server keeps its author bindings in (`core/author-binding.ts`): no client writes it. */
export const AUTHORS_ROOT = 'symphony:authors'
const AUTHORS_ROOT_BYTES = Buffer.from(AUTHORS_ROOT)

export interface ScanOptions {
  /**
   * Refuse (`DocumentTooLargeError`) an update of more structs and clients than this, or more
   * deleted ranges, as soon as the count passes it: what the scan allocates stays in proportion.
   */
  maxStructs?: number
  /** Refuse (`DocumentTooLargeError`) an item holding more JSON elements; `MAX_ITEM_VALUE_ELEMENTS` by default. */
  maxItemElements?: number
}

/** The index of the first struct of `run` that ends after `clock` (`run.length` if none): binary search. */
export function firstEndingAfter(run: ScannedStruct[], clock: number): number {
  let low = 0
  let high = run.length
  while (low < high) {
    const middle = (low + high) >>> 1
    const struct = run[middle] as ScannedStruct
    if (struct.clock + struct.length <= clock) low = middle + 1
    else high = middle
  }
  return low
}

/** A run of garbage-collected structs (one entry however many the update lists): Yjs never cuts one. */
export function isGarbage(struct: ScannedStruct): boolean {
  return struct.content === NO_CONTENT && !struct.gap
}

// Struct and content kinds of the v1 update encoding (Yjs' `contentRefs`).
const GC = 0
const DELETED = 1
const JSON_CONTENT = 2
const BINARY = 3
const STRING = 4
const EMBED = 5
const FORMAT = 6
const TYPE = 7
const ANY = 8
const SUBDOCUMENT = 9
const SKIP = 10
const HAS_ORIGIN = 0x80
const HAS_RIGHT_ORIGIN = 0x40
const HAS_PARENT_SUB = 0x20
/** Yjs' `typeRefs`: YXmlElement and YXmlHook carry a name. */
const NAMED_TYPES = new Set([3, 5])
const TYPE_KINDS = 7

/**
 * Reads a v1 update once, without building it: the ids, lengths and dependencies of its structs
 * and its deletions, checking on the way what Yjs would trust blindly (impossible ranges, zero
 * lengths, references forward in a client's own history, JSON nested too deep or not JSON,
 * unknown content, subdocuments). Yjs' own `decodeUpdate` materializes every struct and its
 * content, so the guard paid a second full decode for every update; this reads each byte once and
 * builds only the strings whose length Yjs counts. Throws `ProtocolError`.
 */
export function scanUpdate(update: Uint8Array, options: ScanOptions = {}): ScannedUpdate {
  const max = options.maxStructs ?? Number.POSITIVE_INFINITY
  const limits = { maxStructs: max, maxItemElements: options.maxItemElements ?? MAX_ITEM_VALUE_ELEMENTS }
  try {
    // Counted first, keeping nothing, so an update past the limit is refused before the scan holds
    // anything of it (a smaller one cannot pass it).
    if (update.length * STRUCTS_PER_BYTE > max) read(update, null, limits)
    return read(update, [], limits)
  } catch (error) {
    if (error instanceof ProtocolError || error instanceof DocumentTooLargeError) throw error
    throw new ProtocolError(`unreadable update: ${(error as Error).message}`)
  }
}

/**
 * What applying `update` costs a document besides its bytes (its structs, and what its content
 * builds: `builtBytes`), read without keeping anything of it: how a document, a stored state or a
 * load is charged. No limit but the update's own; nothing for one the scan cannot read (Yjs reads
 * some that it refuses, like subdocuments).
 */
export function contentCostOf(update: Uint8Array): ContentCost {
  try {
    const unlimited = { maxStructs: Number.POSITIVE_INFINITY, maxItemElements: Number.POSITIVE_INFINITY }
    const { structCount, builtBytes } = read(update, null, unlimited)
    return { structs: structCount, builtBytes }
  } catch {
    return { structs: 0, builtBytes: 0 }
  }
}

interface ScanLimits {
  maxStructs: number
  maxItemElements: number
}

/** What the read of one update gathers besides its structs. */
interface ScanState {
  cuts: number[] | null
  authorsRootWriters: Set<number>
  /** The values of the struct being read. */
  values: ValueTally
  maxItemElements: number
}

/** The update's structs and deletions; with `cuts` null it is only read and counted, and nothing is kept. */
function read(update: Uint8Array, cuts: number[] | null, limits: ScanLimits): ScannedUpdate {
  const decoder = decoding.createDecoder(update)
  const state: ScanState = {
    cuts,
    authorsRootWriters: new Set<number>(),
    values: emptyTally(),
    maxItemElements: limits.maxItemElements,
  }
  let builtBytes = 0
  const counted = { structs: 0 }
  const structs = readStructs(decoder, state, limits.maxStructs, counted, (built) => {
    builtBytes += built
  })
  return {
    structCount: counted.structs,
    structs,
    deletions: readDeletions(decoder, cuts, limits.maxStructs),
    cuts: cuts ?? [],
    authorsRootWriters: state.authorsRootWriters,
    builtBytes,
  }
}

function readStructs(
  decoder: decoding.Decoder,
  state: ScanState,
  max: number,
  counted: { structs: number },
  onBuilt: (bytes: number) => void,
): Map<number, ScannedStruct[]> {
  const { cuts } = state
  const structs = new Map<number, ScannedStruct[]>()
  const clients = readCount(decoder)
  let entries = 0
  for (let c = 0; c < clients; c++) {
    const count = readCount(decoder)
    const client = decoding.readVarUint(decoder)
    let clock = decoding.readVarUint(decoder)
    // Yjs keeps only a client's last group of structs: a second one would make it drop the first.
    if (structs.has(client)) throw new ProtocolError(`client ${client} appears twice in the update`)
    const run: ScannedStruct[] = []
    if (cuts) structs.set(client, run)
    let previous: ScannedStruct | undefined
    for (let i = 0; i < count; i++) {
      const start = decoder.pos
      const struct = readStruct(decoder, client, clock, state)
      checkRange(client, clock, struct.length, 'struct')
      onBuilt(struct.built)
      clock += struct.length
      if (struct.content === NO_CONTENT && previous?.content === NO_CONTENT && previous.gap === struct.gap) {
        // A run of GC structs (or of gaps) is one struct to the guard: no object per 2 bytes.
        previous.length += struct.length
        previous.bytes += decoder.pos - start
        continue
      }
      // Each client and each struct may become an object of the room's (100–300 bytes each).
      if (++entries + (c + 1) * CLIENT_STRUCTS > max) tooManyStructs(max)
      struct.start = start
      struct.bytes = decoder.pos - start
      previous = struct
      if (cuts) run.push(struct)
    }
  }
  counted.structs = entries + clients * CLIENT_STRUCTS
  return structs
}

function tooManyStructs(max: number): never {
  throw new DocumentTooLargeError(`the update holds more than the ${max} structs the document may still gain`)
}

function readStruct(
  decoder: decoding.Decoder,
  client: number,
  clock: number,
  state: ScanState,
): ScannedStruct {
  const { cuts } = state
  const info = readByte(decoder)
  const kind = info & 0x1f
  if (kind === GC || kind === SKIP) {
    const length = decoding.readVarUint(decoder)
    return {
      clock,
      length,
      gap: kind === SKIP,
      needs: NEEDS_NOTHING,
      start: 0,
      bytes: 0,
      built: 0,
      content: NO_CONTENT,
    }
  }
  let needs = NEEDS_NOTHING
  /** Reads an id the struct refers to; the struct holding it may be cut `cut` clocks after it (null: never). */
  const reference = (cut: 0 | 1 | null) => {
    const refClient = decoding.readVarUint(decoder)
    const refClock = decoding.readVarUint(decoder)
    checkRange(refClient, refClock, 1, 'reference')
    if (refClient !== client) {
      if (needs === NEEDS_NOTHING) needs = []
      needs.push(refClient, refClock)
    } else if (refClock >= clock) {
      throw new ProtocolError(`struct ${client}:${clock} refers to its own future`)
    }
    if (cut === null || !cuts) return
    // Clock 0 and the end of the struct just before this one (typing) are boundaries already.
    const at = refClock + cut
    if (at !== 0 && !(refClient === client && at === clock)) cuts.push(refClient, at)
  }
  if (info & HAS_ORIGIN) reference(1)
  if (info & HAS_RIGHT_ORIGIN) reference(0)
  let built = 0
  if ((info & (HAS_ORIGIN | HAS_RIGHT_ORIGIN)) === 0) {
    if (decoding.readVarUint(decoder) === 1) {
      if (AUTHORS_ROOT_BYTES.equals(readString(decoder))) state.authorsRootWriters.add(client) // a root type's name
    } else reference(null) // the parent type's id: never cut
    if (info & HAS_PARENT_SUB) {
      readString(decoder)
      built += STRUCT_COST.mapEntry
    }
  }
  const values = state.values
  values.elements = 0
  values.bytes = 0
  const length = readContent(decoder, kind, values)
  if (values.elements > state.maxItemElements) {
    throw new DocumentTooLargeError(
      `an item holding ${values.elements} JSON elements: one item may hold ${state.maxItemElements} at most`,
    )
  }
  built += values.bytes + (kind === TYPE ? STRUCT_COST.type : 0)
  return { clock, length, gap: false, needs, start: 0, bytes: 0, built }
}

/** Reads an item's content, counting its values in `values`; returns its length as Yjs counts it. */
function readContent(decoder: decoding.Decoder, kind: number, values: ValueTally): number {
  switch (kind) {
    case DELETED:
      return decoding.readVarUint(decoder)
    case JSON_CONTENT: {
      const count = readCount(decoder)
      for (let i = 0; i < count; i++) checkJson(readString(decoder), true, values)
      return count
    }
    case BINARY:
      readBytes(decoder)
      countValue(values, VALUE_COST.bytes)
      return 1
    case STRING:
      return utf16Length(readString(decoder))
    case EMBED:
      checkJson(readString(decoder), false, values)
      return 1
    case FORMAT:
      readString(decoder)
      checkJson(readString(decoder), false, values)
      return 1
    case TYPE: {
      const typeRef = decoding.readVarUint(decoder)
      if (typeRef >= TYPE_KINDS) throw new ProtocolError(`unknown shared type ${typeRef}`)
      if (NAMED_TYPES.has(typeRef)) readString(decoder)
      return 1
    }
    case ANY: {
      const count = readCount(decoder)
      for (let i = 0; i < count; i++) skipAny(decoder, values)
      return count
    }
    case SUBDOCUMENT:
      throw new ProtocolError('subdocuments are not supported')
    default:
      throw new ProtocolError(`unknown content type ${kind}`)
  }
}

function readDeletions(decoder: decoding.Decoder, cuts: number[] | null, max: number): Map<number, number[]> {
  const deletions = new Map<number, number[]>()
  const clients = readCount(decoder)
  let total = 0
  for (let c = 0; c < clients; c++) {
    const client = decoding.readVarUint(decoder)
    const count = readCount(decoder)
    // A deleted range may cut a struct at each end: two objects more for the room.
    total += count
    if (total > max) tooManyStructs(max)
    const ranges = deletions.get(client) ?? []
    if (cuts) deletions.set(client, ranges)
    for (let i = 0; i < count; i++) {
      const clock = decoding.readVarUint(decoder)
      const length = decoding.readVarUint(decoder)
      checkRange(client, clock, length, 'deletion')
      if (!cuts) continue
      ranges.push(clock, length)
      if (clock !== 0) cuts.push(client, clock)
      cuts.push(client, clock + length)
    }
  }
  return deletions
}

/** A length-prefixed byte string, as a view, after checking it lies inside the update. */
function readBytes(decoder: decoding.Decoder): Uint8Array {
  const length = decoding.readVarUint(decoder)
  const start = decoder.pos
  if (length > decoder.arr.length - start) throw new ProtocolError('a length runs past the end of the update')
  decoder.pos += length
  return decoder.arr.subarray(start, start + length)
}

/** A string's UTF-8 bytes: Yjs decodes strings strictly, so anything else would throw mid-apply. */
function readString(decoder: decoding.Decoder): Uint8Array {
  const bytes = readBytes(decoder)
  if (!isUtf8(bytes)) throw new ProtocolError('a string that is not UTF-8')
  return bytes
}

/** A valid UTF-8 string's length in UTF-16 units, the unit Yjs counts a text's length in. */
function utf16Length(utf8: Uint8Array): number {
  let units = 0
  for (const byte of utf8) {
    if ((byte & 0xc0) !== 0x80) units++ // a character starts here
    if (byte >= 0xf0) units++ // beyond the BMP: a surrogate pair
  }
  return units
}

/**
 * A count of things that each take at least one byte: more than the bytes left is a lie, refused
 * before anything loops over it.
 */
function readCount(decoder: decoding.Decoder): number {
  const count = decoding.readVarUint(decoder)
  if (count > decoder.arr.length - decoder.pos) {
    throw new ProtocolError(`claims ${count} entries in ${decoder.arr.length - decoder.pos} bytes`)
  }
  return count
}

function readByte(decoder: decoding.Decoder): number {
  if (decoder.pos >= decoder.arr.length) throw new ProtocolError('the update ends early')
  return decoding.readUint8(decoder)
}

function checkJson(text: Uint8Array, undefinedAllowed: boolean, values: ValueTally): void {
  if (undefinedAllowed && isUndefinedLiteral(text)) {
    countValue(values, 0)
    return
  }
  const problem = jsonTextProblem(text, MAX_JSON_DEPTH, values)
  if (problem) throw new ProtocolError(`a JSON value that is ${problem}`)
}

const UNDEFINED = Buffer.from('undefined')
const isUndefinedLiteral = (text: Uint8Array) => UNDEFINED.equals(text)

// lib0's `any` encoding: a type byte, then the value.
const ANY_UNDEFINED = 127
const ANY_NULL = 126
const ANY_INTEGER = 125
const ANY_FLOAT32 = 124
const ANY_FLOAT64 = 123
const ANY_BIGINT = 122
const ANY_FALSE = 121
const ANY_TRUE = 120
const ANY_STRING = 119
const ANY_OBJECT = 118
const ANY_ARRAY = 117
const ANY_BYTES = 116

/**
 * Skips one lib0 `any` value without building it, and without recursion (lib0's reader recurses,
 * so a value nested deep enough overflows the stack of whoever reads it).
 */
function skipAny(decoder: decoding.Decoder, values: ValueTally): void {
  /** Per open container: the values still to read in it, and whether each comes after a key. */
  const open: { left: number; keyed: boolean }[] = []
  for (;;) {
    const type = readByte(decoder)
    let opened = false
    switch (type) {
      case ANY_UNDEFINED:
      case ANY_NULL:
      case ANY_FALSE:
      case ANY_TRUE:
        countValue(values, 0)
        break
      case ANY_INTEGER: {
        // lib0 writes an integer past 31 bits as a float64 (boxed); one that fits stays in its slot.
        decoding.readVarInt(decoder)
        countValue(values, 0)
        break
      }
      case ANY_FLOAT32:
        advance(decoder, 4)
        countValue(values, VALUE_COST.boxed)
        break
      case ANY_FLOAT64:
      case ANY_BIGINT:
        advance(decoder, 8)
        countValue(values, VALUE_COST.boxed)
        break
      case ANY_STRING:
        countValue(values, readString(decoder).length > 1 ? VALUE_COST.boxed : 0)
        break
      case ANY_BYTES:
        readBytes(decoder)
        countValue(values, VALUE_COST.bytes)
        break
      case ANY_OBJECT:
      case ANY_ARRAY: {
        const left = readCount(decoder)
        countValue(values, type === ANY_OBJECT ? VALUE_COST.object : arrayCost(left))
        if (open.length >= MAX_JSON_DEPTH) {
          throw new ProtocolError(`values nested deeper than ${MAX_JSON_DEPTH} levels`)
        }
        if (left > 0) open.push({ left, keyed: type === ANY_OBJECT })
        opened = left > 0
        break
      }
      default:
        throw new ProtocolError(`unknown value type ${type}`)
    }
    if (!opened) {
      // A value is complete: count it in its container, and any container it completes in turn.
      while (open.length > 0) {
        const top = open[open.length - 1] as { left: number }
        if (--top.left > 0) break
        open.pop()
      }
      if (open.length === 0) return
    }
    if (open[open.length - 1]?.keyed) readKey(decoder)
  }
}

const PROTO = Buffer.from('__proto__')

/**
 * An object key in an `any` value. lib0's reader assigns keys to a plain object, where
 * `__proto__` would set the object's prototype instead of a key: readers would disagree.
 */
function readKey(decoder: decoding.Decoder): void {
  if (PROTO.equals(readString(decoder))) {
    throw new ProtocolError('an object key named __proto__')
  }
}

function advance(decoder: decoding.Decoder, bytes: number): void {
  if (decoder.pos + bytes > decoder.arr.length) throw new ProtocolError('the update ends early')
  decoder.pos += bytes
}

function checkRange(client: number, clock: number, length: number, what: string): void {
  if (!(length >= 1) || !(client >= 0) || client > MAX_CLOCK || !(clock >= 0) || clock + length > MAX_CLOCK) {
    throw new ProtocolError(
      `${what} with an impossible range (client ${client}, clock ${clock}, length ${length})`,
    )
  }
}
