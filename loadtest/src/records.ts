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
  // A map's keys come out in the order this replica learned them: sort them to compare replicas.
  const shapes = Object.entries(doc.getMap(SHAPES).toJSON()).sort(([a], [b]) => (a < b ? -1 : 1))
  return JSON.stringify({ shapes, log: doc.getArray(LOG).toJSON() })
}
