import type { JournalContents, JournalPosition, UpdateJournal } from '../ports/update-journal.js'
import { EpochFences } from './epoch-fences.js'

interface Entry {
  seq: number
  update: Uint8Array
}

/** The name of a room's one stream in a position. */
const ROOM_STREAM = 'owner'

/**
 * The in-process storage behind `MemoryUpdateJournal`: room → its entries. Servers of one process
 * (tests) share one, as servers share Redis; it outlives any one server's journal.
 */
export class MemoryJournalTable {
  readonly rooms = new Map<string, Entry[]>()
  /** One sequence for the table, never reset: a stale position never reaches a later entry. */
  lastSeq = 0
  /** Shared by the table's journals, as Redis keeps one fence per room for every server. */
  readonly fences = new EpochFences()
}

/**
 * `UpdateJournal` in memory, one stream per room: an append is stored before it returns, a
 * position names the last entry covered, and a trim drops exactly the entries at or before it, so
 * appends racing a trim stay.
 */
export class MemoryUpdateJournal implements UpdateJournal {
  constructor(private readonly table: MemoryJournalTable = new MemoryJournalTable()) {}

  append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition> {
    try {
      this.table.fences.pass(room, epoch)
    } catch (error) {
      return Promise.reject(error)
    }
    let entries = this.table.rooms.get(room)
    if (!entries) {
      entries = []
      this.table.rooms.set(room, entries)
    }
    const seq = ++this.table.lastSeq
    entries.push({ seq, update: update.slice() })
    return Promise.resolve(new Map([[ROOM_STREAM, String(seq)]]))
  }

  async fence(room: string, epoch: number): Promise<void> {
    this.table.fences.pass(room, epoch)
  }

  async read(room: string): Promise<JournalContents> {
    const entries = this.table.rooms.get(room) ?? []
    const last = entries.at(-1)
    return {
      updates: entries.map(({ update }) => update.slice()),
      position: last ? new Map([[ROOM_STREAM, String(last.seq)]]) : new Map(),
    }
  }

  async trim(room: string, position: JournalPosition, epoch?: number): Promise<void> {
    this.table.fences.pass(room, epoch)
    const upTo = position.get(ROOM_STREAM)
    const entries = this.table.rooms.get(room)
    if (upTo === undefined || !entries) return
    const kept = entries.filter(({ seq }) => seq > Number(upTo))
    if (kept.length > 0) this.table.rooms.set(room, kept)
    else this.table.rooms.delete(room)
  }

  async delete(room: string, epoch?: number): Promise<void> {
    this.table.fences.pass(room, epoch)
    this.table.rooms.delete(room)
  }

  async close(): Promise<void> {}
}
