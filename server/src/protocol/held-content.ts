import { isDeepStrictEqual } from 'node:util'
import * as Y from 'yjs'
import { ProtocolError } from '../errors.js'
import { type ScannedUpdate, scanUpdate } from './update-scan.js'
import {
  ContentDeleted,
  ContentFormat,
  ContentString,
  ContentType,
  clockOf,
  type GC,
  type ID,
  type IntegratedStruct,
  Item,
  parentKey,
  Skip,
  structIndexAt,
  structsOf,
  waitingStructs,
} from './yjs-internals.js'

/** Each client's clock ranges, as [start, end, start, end, ...] in clock order, adjacent ones joined. */
export type ClockRanges = Map<number, number[]>

/** The clock ranges an update's structs cover, its gaps left out. */
export function rangesOf(scanned: ScannedUpdate): ClockRanges {
  const ranges: ClockRanges = new Map()
  for (const [client, run] of scanned.structs) {
    const own: number[] = []
    for (const struct of run) {
      if (struct.gap) continue
      const end = struct.clock + struct.length
      if (own.length > 0 && own[own.length - 1] === struct.clock) own[own.length - 1] = end
      else own.push(struct.clock, end)
    }
    if (own.length > 0) ranges.set(client, own)
  }
  return ranges
}

type Struct = Item | GC | Skip

/**
 * What a room holds under each client id, integrated (its clocks up to Yjs' state) or waiting for
 * missing dependencies, and whether an update brings the same there. Yjs drops a struct whose id
 * it holds, whatever it carries: an update that repeats held ids with other content would be
 * acknowledged and forwarded, and the copies that received it first would keep it, so replicas
 * disagree for good (their state vectors agree, so anti-entropy never repairs it).
 */
export class HeldContent {
  readonly #doc: Y.Doc
  /** The waiting structs' ranges, for the waiting update they were read from. */
  #waiting: { update: Uint8Array; ranges: ClockRanges } | null = null

  constructor(doc: Y.Doc) {
    this.#doc = doc
  }

  /** The clock the room's integrated history of `client` reaches. */
  end(client: number): number {
    return clockOf(this.#doc, client)
  }

  /** Whether `ranges` reach anything the room holds. */
  overlaps(ranges: ClockRanges): boolean {
    for (const [client, own] of ranges) {
      if ((own[0] as number) < this.end(client)) return true
      if (intersects(own, this.#waitingRanges().get(client))) return true
    }
    return false
  }

  /** The clients under which `ranges` bring clocks the room holds in no form: what they write. */
  written(ranges: ClockRanges): number[] {
    const clients: number[] = []
    for (const [client, own] of ranges) {
      const end = this.end(client)
      if ((own[own.length - 1] as number) <= end) continue
      const waiting = this.#waitingRanges().get(client)
      if (!waiting || !covers(waiting, own, end)) clients.push(client)
    }
    return clients
  }

  /**
   * Refuses (`ProtocolError`) an update that brings, under ids the room holds, anything else
   * than the room holds there: another content kind, other content, another position (origins,
   * parent, key). Content the room deleted or collected can only be compared by length, which
   * the ids already agree on; so can a struct the sender holds deleted or collected.
   */
  compare(update: Uint8Array): void {
    let decoded: Struct[]
    try {
      decoded = Y.decodeUpdate(update).structs
    } catch (error) {
      throw new ProtocolError(`unreadable update: ${(error as Error).message}`)
    }
    let waiting: Map<number, Struct[]> | null = null
    for (const struct of decoded) {
      if (struct instanceof Skip) continue
      const { client, clock } = struct.id
      const end = Math.min(clock + struct.length, this.end(client))
      if (clock < end) this.#compareIntegrated(struct, clock, end)
      const held = this.#waitingRanges().get(client)
      if (!held || !intersects([clock, clock + struct.length], held)) continue
      waiting ??= this.#waitingStructs()
      for (const other of waiting.get(client) ?? []) {
        const from = Math.max(clock, other.id.clock, end)
        const to = Math.min(clock + struct.length, other.id.clock + other.length)
        if (from < to) compareUnits(struct, other, from, to)
      }
    }
  }

  #compareIntegrated(struct: Item | GC, from: number, to: number): void {
    const structs = structsOf(this.#doc, struct.id.client) as IntegratedStruct[]
    for (let index = structIndexAt(structs, from); index < structs.length; index++) {
      const held = structs[index] as Struct
      if (held.id.clock >= to) break
      compareUnits(struct, held, Math.max(from, held.id.clock), Math.min(to, held.id.clock + held.length))
    }
  }

  /** The waiting structs' ranges, read once per waiting update (Yjs replaces it when it changes). */
  #waitingRanges(): ClockRanges {
    const update = waitingStructs(this.#doc)?.update
    if (!update) return NOTHING
    if (this.#waiting?.update !== update) {
      let ranges: ClockRanges
      try {
        ranges = rangesOf(scanUpdate(Y.convertUpdateFormatV2ToV1(update)))
      } catch {
        ranges = new Map() // Yjs wrote it; if the scan refuses it, nothing can be compared there
      }
      this.#waiting = { update, ranges }
    }
    return this.#waiting.ranges
  }

  #waitingStructs(): Map<number, Struct[]> {
    const byClient = new Map<number, Struct[]>()
    const update = waitingStructs(this.#doc)?.update
    if (!update) return byClient
    for (const struct of Y.decodeUpdateV2(update).structs) {
      const own = byClient.get(struct.id.client) ?? []
      own.push(struct)
      byClient.set(struct.id.client, own)
    }
    return byClient
  }
}

const NOTHING: ClockRanges = new Map()

/** Whether two range lists share a clock. */
function intersects(ranges: number[], others: number[] | undefined): boolean {
  if (!others) return false
  for (let i = 0; i < ranges.length; i += 2) {
    for (let j = 0; j < others.length; j += 2) {
      if (
        (ranges[i] as number) < (others[j + 1] as number) &&
        (others[j] as number) < (ranges[i + 1] as number)
      )
        return true
    }
  }
  return false
}

/** Whether `held` covers every clock of `ranges` from `from` on. */
function covers(held: number[], ranges: number[], from: number): boolean {
  for (let i = 0; i < ranges.length; i += 2) {
    let clock = Math.max(ranges[i] as number, from)
    const end = ranges[i + 1] as number
    for (let j = 0; j < held.length && clock < end; j += 2) {
      if ((held[j] as number) <= clock && clock < (held[j + 1] as number)) clock = held[j + 1] as number
    }
    if (clock < end) return false
  }
  return true
}

/** Compares what `sent` and `held` hold at the clocks [from, to), which both cover. */
function compareUnits(sent: Struct, held: Struct, from: number, to: number): void {
  if (!(sent instanceof Item) || !(held instanceof Item)) return // collected: only lengths
  const problem =
    cutsCharacter(sent, held, from) ??
    positionDiffers(sent, held, from) ??
    contentDiffers(sent, held, from, to)
  if (problem) {
    throw new ProtocolError(
      `the update brings other content under ids this room holds (client ${sent.id.client}, clocks ${from}–${to - 1}: ${problem})`,
    )
  }
}

/**
 * Whether `sent` starts inside `held` between the two halves of a character (a surrogate pair).
 * Yjs splits the held item where a struct's origin points, even for a struct it then drops as
 * held, and a split pair becomes two U+FFFD: the room's copy would differ from every other.
 * Real clients cut their updates where their own history does, never inside a character.
 */
function cutsCharacter(sent: Item, held: Item, clock: number): string | null {
  if (clock !== sent.id.clock || clock === held.id.clock || !(held.content instanceof ContentString))
    return null
  const at = clock - held.id.clock
  const before = held.content.str.charCodeAt(at - 1)
  const after = held.content.str.charCodeAt(at)
  const splits = before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff
  return splits ? 'it starts inside a character of held text' : null
}

/** Where the unit at `clock` was inserted: its origins, and its parent and key when it has no origin. */
function positionDiffers(sent: Item, held: Item, clock: number): string | null {
  const origin = (item: Item) => (clock > item.id.clock ? Y.createID(item.id.client, clock - 1) : item.origin)
  const left = origin(sent)
  if (!sameId(left, origin(held))) return 'another left origin'
  if (!sameId(sent.rightOrigin, held.rightOrigin)) return 'another right origin'
  if (left || sent.rightOrigin) return null // the parent and key follow from the origins
  if (parentKey(sent.parent) !== parentKey(held.parent)) return 'another parent'
  if (sent.parentSub !== held.parentSub) return 'another key'
  return null
}

function sameId(a: ID | null, b: ID | null): boolean {
  return a === b || (!!a && !!b && a.client === b.client && a.clock === b.clock)
}

/** The content of the units [from, to) of each, unless either was deleted (then only lengths count). */
function contentDiffers(sent: Item, held: Item, from: number, to: number): string | null {
  const a = sent.content
  const b = held.content
  if (a instanceof ContentDeleted || b instanceof ContentDeleted) return null
  if (a.constructor !== b.constructor) return 'another kind of content'
  const startA = from - sent.id.clock
  const startB = from - held.id.clock
  const length = to - from
  if (a instanceof ContentString) {
    const mine = a.str.slice(startA, startA + length)
    const theirs = (b as ContentString).str.slice(startB, startB + length)
    // Yjs replaces the halves of a surrogate pair it splits with U+FFFD, and so does an encoder
    // sending half a pair: those units cannot be compared.
    return mine === theirs || withoutSurrogates(mine) === withoutSurrogates(theirs) ? null : 'other text'
  }
  if (a instanceof ContentType) {
    const typeA = a.type as Y.AbstractType<unknown> & { nodeName?: string; hookName?: string }
    const typeB = (b as ContentType).type as typeof typeA
    const same =
      typeA.constructor === typeB.constructor &&
      typeA.nodeName === typeB.nodeName &&
      typeA.hookName === typeB.hookName
    return same ? null : 'another shared type'
  }
  if (a instanceof ContentFormat) {
    const other = b as ContentFormat
    return a.key === other.key && isDeepStrictEqual(a.value, other.value) ? null : 'other formatting'
  }
  const mine = a.getContent().slice(startA, startA + length)
  const theirs = b.getContent().slice(startB, startB + length)
  return isDeepStrictEqual(mine, theirs) ? null : 'other values'
}

const SURROGATES = /[\uD800-\uDFFF\uFFFD]/g
const withoutSurrogates = (text: string) => text.replace(SURROGATES, '\uFFFD')
