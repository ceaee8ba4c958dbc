import { randomInt } from 'node:crypto'
import type * as Y from 'yjs'
import { ProtocolError, ServerBusyError } from '../errors.js'
import type { ClockRanges, HeldContent } from '../protocol/held-content.js'
import { encodeMapEntries, type MapEntry } from '../protocol/map-entries.js'
import { isServerClient, SERVER_CLIENTS_FROM, type ServerParts } from '../protocol/reserved-writes.js'
import { AUTHORS_ROOT } from '../protocol/update-scan.js'
import {
  clockOf,
  holdsClient,
  type IntegratedStruct,
  Item,
  mapItem,
  structIndexAt,
  structsOf,
} from '../protocol/yjs-internals.js'
import type { RoomJournal } from './room-journal.js'
import type { RoomMember } from './room-member.js'
import type { Writer } from './update-origin.js'

/** Key prefix of a subject's display name in the map (client ids are digits). */
const NAME_KEY = '@'

/** One binding, as the REST API reports it. */
export interface Author {
  clientId: number
  subject: string
  /** The subject's display name (the token's `name`) when it last bound a client id; null if none. */
  name: string | null
}

/** What the room may do with a client's update, as far as its authors go. */
export type Authorship =
  | { kind: 'apply' }
  /** These client ids are the writer's first writes: bind them (`bind`), then ask again. */
  | { kind: 'bind'; clients: number[] }
  /** Bindings of the same subject's are being written: ask again once they settle. */
  | { kind: 'wait'; until: Promise<unknown> }

const APPLY: Authorship = { kind: 'apply' }

/** What a binding adds to a document, at most: its encoded bytes and its structs (one per entry). */
export interface BindingSize {
  bytes: number
  structs: number
}

export const NO_BINDING: BindingSize = { bytes: 0, structs: 0 }

/**
 * An entry's encoding past its key and value: its info byte, its parent (the root's name, written
 * for each entry) or the item it replaces, and the lengths (checked in unit/binding-size.test.ts).
 */
const ENTRY_FRAMING_BYTES = 48
const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8')

export interface AuthorBindingInit {
  doc: Y.Doc
  /** Auth is on. Off (`AUTH=none`) there are no subjects: nothing is bound, and nothing checked against bindings. */
  enabled: boolean
  /** Who speaks for an awareness client id now (`PresenceOwners`). */
  ownerOf(clientId: number): RoomMember | undefined
  /**
   * Journals a binding update, applies it, and sends it to the room's clients and peers once it
   * is durable; resolves once applied (or the room is gone).
   */
  write(update: Uint8Array): Promise<void>
}

/**
 * Which token subject each Yjs client id of a room belongs to: the subject that first wrote under
 * it. Kept in the document itself, in the root map `AUTHORS_ROOT` (client id → subject, and
 * `@subject` → display name), so a binding is journaled, saved, relayed and loaded with the
 * edit that made it, everywhere the room goes. The server writes the map under client ids of its
 * own (`SERVER_CLIENTS_FROM` and up), never under the document's `clientID`; clients may not
 * write it (`checkReservedWrites`).
 *
 * A binding is written only when a subject first writes under a client id (each browser session
 * has a new one), and journaled and confirmed before any client or peer sees it: a client that
 * held a binding the room then lost would resend the server's items with every sync, and they
 * could never be told from a forgery.
 */
export class AuthorBinding {
  readonly #doc: Y.Doc
  readonly #map: Y.Map<unknown>
  readonly #enabled: boolean
  readonly #ownerOf: AuthorBindingInit['ownerOf']
  readonly #write: AuthorBindingInit['write']
  /** The client id this server writes bindings with, chosen at its first. */
  #writer: number | null = null
  /** Client ids whose binding is being written, with its subject. */
  readonly #pending = new Map<number, { subject: string; written: Promise<unknown> }>()

  constructor({ doc, enabled, ownerOf, write }: AuthorBindingInit) {
    this.#doc = doc
    this.#map = doc.getMap(AUTHORS_ROOT)
    this.#enabled = enabled
    this.#ownerOf = ownerOf
    this.#write = write
  }

  /** The subject `client` is bound to, if any. */
  subjectOf(client: number): string | undefined {
    const subject = this.#map.get(String(client))
    return typeof subject === 'string' ? subject : undefined
  }

  /**
   * What the room may do with an update of `writer`'s that brings the clock `ranges`. Every
   * client id under which it brings clocks the room holds in no form is one it writes: bound to
   * the writer's subject, it may; bound to another, it is refused (`ProtocolError`, close 1002).
   * An unbound one is the writer's to bind, unless another connection's presence speaks for it
   * (`ServerBusyError`, close 1013: its owner may be about to write under it, and a client learns
   * ids from presence). Resends of what the room holds are the content check's (`HeldContent`).
   */
  admit(ranges: ClockRanges, held: HeldContent, writer: Writer): Authorship {
    if (!this.#enabled) return APPLY
    const subject = writer.identity.userId
    const unbound: number[] = []
    const waits: Promise<unknown>[] = []
    for (const client of held.written(ranges)) {
      if (isServerClient(client)) continue // `checkServerParts` refused what it writes there
      const bound = this.subjectOf(client) ?? this.#pending.get(client)?.subject
      if (bound !== undefined && bound !== subject) {
        throw new ProtocolError(
          `client id ${client} belongs to another user: an update may only add to client ids its user wrote under first`,
        )
      }
      const pending = this.#pending.get(client)
      if (pending) waits.push(pending.written)
      if (bound !== undefined) continue
      const owner = this.#ownerOf(client)
      if (owner !== undefined && owner !== writer && owner.identity.userId !== subject) {
        throw new ServerBusyError(
          `client id ${client} is in use by another connection (its presence); try again once it has left`,
        )
      }
      unbound.push(client)
    }
    if (unbound.length > 0) return { kind: 'bind', clients: unbound }
    if (waits.length > 0) return { kind: 'wait', until: Promise.allSettled(waits) }
    return APPLY
  }

  /**
   * At most what binding `clients` to `writer`'s subject adds to the document: each client id's
   * entry holds a copy of the subject, so a write under many fresh ids grows the room by far more
   * than its own bytes, and is measured against the ceilings before anything is bound.
   */
  sizeOfBinding(clients: number[], writer: Writer): BindingSize {
    const { userId: subject, name } = writer.identity
    const entry = ENTRY_FRAMING_BYTES + utf8Bytes(subject)
    let bytes = 0
    for (const client of clients) bytes += entry + String(client).length
    if (name === null) return { bytes, structs: clients.length }
    bytes += entry + NAME_KEY.length + utf8Bytes(name)
    return { bytes, structs: clients.length + 1 }
  }

  /**
   * Binds `clients` to `writer`'s subject; resolves once the binding is applied (or failed). Called
   * in the room's mailbox, so bindings are written one at a time, each taking the writer's next
   * clocks; an update checked meanwhile outside it is told to wait for them.
   */
  bind(clients: number[], writer: Writer): Promise<unknown> {
    const { userId: subject, name } = writer.identity
    const written = this.#bindNow(clients, subject, name)
    const pending = { subject, written }
    for (const client of clients) this.#pending.set(client, pending)
    return written.finally(() => {
      for (const client of clients) if (this.#pending.get(client) === pending) this.#pending.delete(client)
    })
  }

  /**
   * Lets through, of what an update holds under the server's client ids, only copies of what the
   * room holds: structs the room holds (the content check compares them) and deletions of items
   * it holds deleted. Anything else is refused (`ProtocolError`): only servers write there.
   */
  checkServerParts(parts: ServerParts, held: HeldContent): void {
    const [missing] = held.written(parts.structs)
    if (missing !== undefined) {
      throw new ProtocolError(
        `client id ${missing} is the server's: an update may only resend what the room holds of it`,
      )
    }
    for (const [client, ranges] of parts.deletions) {
      const structs = structsOf(this.#doc, client)
      const state = clockOf(this.#doc, client)
      for (let i = 0; i < ranges.length; i += 2) {
        const start = ranges[i] as number
        const end = start + (ranges[i + 1] as number)
        if (!structs || end > state || holdsLive(structs, start, end)) {
          throw new ProtocolError(`client id ${client} is the server's: an update may not delete its items`)
        }
      }
    }
  }

  /** Every binding, by client id. */
  authors(): Author[] {
    const authors: Author[] = []
    for (const [key, subject] of this.#map.entries()) {
      if (typeof subject !== 'string' || !/^\d+$/.test(key)) continue
      const name = this.#map.get(NAME_KEY + subject)
      authors.push({ clientId: Number(key), subject, name: typeof name === 'string' ? name : null })
    }
    return authors.sort((a, b) => a.clientId - b.clientId)
  }

  async #bindNow(clients: number[], subject: string, name: string | null): Promise<void> {
    // Bound meanwhile (by a peer, a same-subject write before): asking again tells which way.
    const entries = clients
      .filter((client) => this.subjectOf(client) === undefined)
      .map((c) => this.#entry(`${c}`, subject))
    if (entries.length === 0) return
    this.#writer ??= this.#pickWriter()
    if (name !== null && this.#map.get(NAME_KEY + subject) !== name)
      entries.push(this.#entry(NAME_KEY + subject, name))
    const clock = clockOf(this.#doc, this.#writer)
    await this.#write(encodeMapEntries(AUTHORS_ROOT, this.#writer, clock, entries))
  }

  #entry(key: string, value: string): MapEntry {
    const item = mapItem(this.#map, key)
    return {
      key,
      value,
      replaces: item ? { client: item.id.client, clock: item.id.clock, length: item.length } : null,
    }
  }

  /** A server client id no one has written under in this room. */
  #pickWriter(): number {
    for (;;) {
      const client = randomInt(SERVER_CLIENTS_FROM, 2 ** 48)
      if (!holdsClient(this.#doc, client)) return client
    }
  }
}

/** Whether an item in [start, end) of a client's structs is not deleted. */
function holdsLive(structs: IntegratedStruct[], start: number, end: number): boolean {
  for (let index = structIndexAt(structs, start); index < structs.length; index++) {
    const struct = structs[index] as IntegratedStruct
    if (struct.id.clock >= end) return false
    if (struct instanceof Item && !struct.deleted) return true
  }
  return false
}

/** Transaction origin of the room's author bindings. */
const BINDING = Symbol('binding')

/** What writing a binding needs of its room. */
export interface BindingRoom {
  journal: Pick<RoomJournal, 'recordBeforeApplying' | 'durable'>
  /** Applies an update to the document (trusted: the server's own). */
  apply(update: Uint8Array, origin: symbol): unknown
  /** Sends an update to the room's connections. */
  broadcast(update: Uint8Array): void
  /** Resolves once the room ends: it saves no more. */
  ended: Promise<void>
}

/**
 * Writes a binding (`AuthorBinding`'s `write`): journaled first and applied once the journal
 * confirms it, then sent to the clients. If the journal fails, it is applied (a snapshot can then
 * hold it) and sent once the snapshot is saved; a room that ends meanwhile saves no more, and its
 * mailbox must not wait for that save for ever.
 */
export async function writeBinding(update: Uint8Array, room: BindingRoom): Promise<void> {
  const journaled = room.journal.recordBeforeApplying(update)
  const appended = await journaled.appended
  try {
    room.apply(update, BINDING)
  } finally {
    journaled.applied()
  }
  const saved = appended || (await Promise.race([room.journal.durable().then(() => true), room.ended]))
  if (saved === true) room.broadcast(update)
}
