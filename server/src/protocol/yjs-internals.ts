import { createRequire } from 'node:module'
import * as Y from 'yjs'

/**
 * The one module that reads Yjs past its documented API: the struct store, pending updates, a
 * type's item list. Yjs does not promise these across releases, so the server pins `yjs` exactly
 * (server/package.json), warns at start on any other version (`yjsVersionCheck`), and
 * `update-scan.ts`, which reads Yjs's update encoding itself, is held to Yjs by a property test in
 * the fast suite (server/test/unit/protocol/update-scan.test.ts). A newer Yjs: bump the pin and
 * `YJS_TESTED_VERSION` together, once `npm run test:unit` passes on it.
 */
export const YJS_TESTED_VERSION = '13.6.33'

/** Yjs's struct classes, for `instanceof` (exported by Yjs, but not part of its documented API). */
export {
  ContentDeleted,
  ContentEmbed,
  ContentFormat,
  ContentString,
  ContentType,
  GC,
  ID,
  Item,
  Skip,
} from 'yjs'

/** An integrated struct: an item, or a run of garbage-collected clocks. */
export type IntegratedStruct = Y.Item | Y.GC

/** What the document holds waiting for missing dependencies (Yjs keeps it as one v2 update). */
export interface WaitingStructs {
  /** A v2 update; Yjs replaces the array whenever what waits changes. */
  update: Uint8Array
  /** For each client, the first clock a waiting struct needs. */
  missing: Map<number, number>
}

/** The clock `client`'s integrated history reaches in `doc` (0: none). */
export function clockOf(doc: Y.Doc, client: number): number {
  return Y.getState(doc.store, client)
}

/** Whether `doc` has integrated anything under `client`. */
export function holdsClient(doc: Y.Doc, client: number): boolean {
  return doc.store.clients.has(client)
}

/** How many client ids `doc` has integrated structs under. */
export function clientCount(doc: Y.Doc): number {
  return doc.store.clients.size
}

/** Each client's integrated structs, in clock order. */
export function structRuns(doc: Y.Doc): IterableIterator<IntegratedStruct[]> {
  return doc.store.clients.values() as IterableIterator<IntegratedStruct[]>
}

/** `client`'s integrated structs in clock order, or undefined if it has none. */
export function structsOf(doc: Y.Doc, client: number): IntegratedStruct[] | undefined {
  return doc.store.clients.get(client) as IntegratedStruct[] | undefined
}

/** The index in `structs` (one client's, in clock order) of the struct holding `clock`. */
export function structIndexAt(structs: IntegratedStruct[], clock: number): number {
  return Y.findIndexSS(structs as never, clock)
}

/** The structs `doc` holds waiting for a missing dependency, or null. */
export function waitingStructs(doc: Y.Doc): WaitingStructs | null {
  return doc.store.pendingStructs
}

/** The deletions `doc` holds waiting for the items they delete (a v2 delete set), or null. */
export function waitingDeletions(doc: Y.Doc): Uint8Array | null {
  return doc.store.pendingDs
}

/** Whether anything in `doc` waits for a missing dependency. */
export function holdsWaiting(doc: Y.Doc): boolean {
  return doc.store.pendingStructs !== null || doc.store.pendingDs !== null
}

/** The first item of a type's list (text, array, XML), deleted ones included. */
export function firstItem<T>(type: Y.AbstractType<T>): Y.Item | null {
  return type._start
}

/** A map-like type's current item under `key`, deleted or not. */
export function mapItem<T>(type: Y.AbstractType<T>, key: string): Y.Item | undefined {
  return type._map.get(key)
}

/** Every key a type has held a map entry under (a root type of any kind may have some). */
export function mapItems<T>(type: Y.AbstractType<T>): Map<string, Y.Item> {
  return type._map
}

/**
 * A struct's parent as an update names it: a root type's name, or the id of the item holding
 * the type; null when it has none.
 */
export function parentKey(parent: Y.Item['parent']): string | null {
  if (parent === null) return null
  if (typeof parent === 'string') return `root ${parent}`
  if (parent instanceof Y.ID) return `${parent.client}:${parent.clock}`
  const type = parent as Y.AbstractType<unknown>
  return type._item ? `${type._item.id.client}:${type._item.id.clock}` : `root ${Y.findRootTypeKey(type)}`
}

/** The document's integrated deletions, encoded (a snapshot with an empty state vector). */
export function encodedDeletions(doc: Y.Doc): Uint8Array {
  return Y.encodeSnapshot(Y.createSnapshot(Y.createDeleteSetFromStructStore(doc.store), new Map()))
}

/** How many transaction clean-ups `doc` has left unfinished (a poisoned document has some). */
export function unfinishedCleanups(doc: Y.Doc): number {
  return (doc as unknown as { _transactionCleanups: unknown[] })._transactionCleanups.length
}

/** The installed Yjs release, and whether it is the one this module was tested with. */
export function yjsVersionCheck(): { installed: string; tested: string; matches: boolean } {
  const { version } = createRequire(import.meta.url)('yjs/package.json') as { version: string }
  return { installed: version, tested: YJS_TESTED_VERSION, matches: version === YJS_TESTED_VERSION }
}

/** What a document holds waiting for missing dependencies, to tell later whether that changed. */
export interface Waiting {
  structs: Uint8Array | undefined
  deletions: Uint8Array | null
}

export function waitingOf(doc: Y.Doc): Waiting {
  return { structs: waitingStructs(doc)?.update, deletions: waitingDeletions(doc) }
}

/**
 * Whether what waits changed since `before`. Yjs replaces its waiting structs' update when it
 * merges more in, but re-encodes its waiting deletions on every update, changed or not: those
 * are compared by their bytes.
 */
export function waitingChanged(doc: Y.Doc, before: Waiting): boolean {
  const { structs, deletions } = waitingOf(doc)
  if (structs !== before.structs) return true
  if (deletions === before.deletions) return false
  return !deletions || !before.deletions || Buffer.compare(deletions, before.deletions) !== 0
}
