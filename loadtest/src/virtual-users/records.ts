import type * as Y from 'yjs'

/** What each document edit carries, so the observer can time it and notice gaps. */
export interface EditRecord {
  /** The sender's user number within the run. */
  u: number
  /** The sender's sequence number, from 1. */
  s: number
  /** `performance.now()` when sent: sender and observer share this process's monotonic clock. */
  t: number
  x: number
  y: number
}

/** A presence state: a cursor, timed and numbered like an edit. */
export interface PresenceRecord {
  name: string
  cursor: { x: number; y: number }
  s: number
  t: number
}

export const SHAPES = 'shapes'
export const LOG = 'log'

export function writeRecord(doc: Y.Doc, edit: 'set' | 'append', record: EditRecord): void {
  if (edit === 'set') doc.getMap(SHAPES).set(`user-${record.u}`, record)
  else doc.getArray(LOG).push([record])
}

export function isEditRecord(value: unknown): value is EditRecord {
  const r = value as Partial<EditRecord> | null
  return typeof r?.u === 'number' && typeof r.s === 'number' && typeof r.t === 'number'
}

export function isPresenceRecord(value: unknown): value is PresenceRecord {
  const r = value as Partial<PresenceRecord> | null
  return typeof r?.s === 'number' && typeof r.t === 'number'
}

/** The part of a document the workloads write, for comparing two replicas. */
export function documentContent(doc: Y.Doc): string {
  return JSON.stringify(sortedKeys({ shapes: doc.getMap(SHAPES).toJSON(), log: doc.getArray(LOG).toJSON() }))
}

/**
 * Object keys sorted at every depth: a map's keys come out in the order a replica learned them, and
 * a server in another language (y-sweet's yrs) may hand back a record's fields in another order.
 */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys)
  if (value === null || typeof value !== 'object') return value
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))
  return Object.fromEntries(entries.map(([key, inner]) => [key, sortedKeys(inner)]))
}
