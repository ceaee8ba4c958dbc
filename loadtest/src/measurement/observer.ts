import type * as Y from 'yjs'
import { type EditRecord, isEditRecord, isPresenceRecord, LOG, SHAPES } from '../virtual-users/records.js'
import type { Measures } from './measures.js'

/**
 * The one client per room that applies everything and measures: each edit and cursor move that
 * reaches it is timed against the sender's clock (same process) and counted per sender, so a
 * missing sequence number shows up as a drop at the end.
 */
export class RoomObserver {
  readonly #updatesFrom = new Map<number, number>()
  readonly #presenceFrom = new Map<number, { last: number; seen: number }>()
  #onUpdate: () => void = () => {}

  constructor(
    private readonly measures: Measures,
    /** The observer's own user number: its own edits are not measured. */
    private readonly self: number,
  ) {}

  watch(doc: Y.Doc): void {
    doc.getMap(SHAPES).observe((event) => {
      const shapes = event.target as Y.Map<unknown>
      for (const key of event.keysChanged) this.#edit(shapes.get(key))
    })
    doc.getArray(LOG).observe((event) => {
      for (const item of event.changes.added) for (const value of item.content.getContent()) this.#edit(value)
    })
  }

  /** Called after each observed edit (the drain at the end waits on it). */
  onUpdate(listener: () => void): void {
    this.#onUpdate = listener
  }

  presence(clientId: number, state: unknown, ownClientId: number): void {
    if (clientId === ownClientId || !isPresenceRecord(state)) return
    const seen = this.#presenceFrom.get(clientId) ?? { last: 0, seen: 0 }
    if (state.s <= seen.last) return // a repeat of a state already counted (e.g. a full-state resend)
    seen.last = state.s
    seen.seen++
    this.#presenceFrom.set(clientId, seen)
    this.measures.record('presence', performance.now() - state.t)
    this.measures.count('presenceObserved')
  }

  updatesFrom(user: number): number {
    return this.#updatesFrom.get(user) ?? 0
  }

  presenceFrom(clientId: number): number {
    return this.#presenceFrom.get(clientId)?.seen ?? 0
  }

  #edit(value: unknown): void {
    if (!isEditRecord(value) || value.u === this.self) return
    const record: EditRecord = value
    this.#updatesFrom.set(record.u, (this.#updatesFrom.get(record.u) ?? 0) + 1)
    this.measures.record('update', performance.now() - record.t)
    this.measures.count('updatesObserved')
    this.#onUpdate()
  }
}
