import type {
  JournalContents,
  JournalPosition,
  OrphanedEntries,
  UpdateJournal,
} from '../ports/update-journal.js'
import { EpochFences } from './epoch-fences.js'

interface Entry {
  seq: number
  update: Uint8Array
}

/**
 * The in-process storage behind `MemoryUpdateJournal`: room → writer → entries. Servers of one
 * process (tests) share one, as servers share Redis; it outlives any one writer's journal.
 */
export class MemoryJournalTable {
  readonly rooms = new Map<string, Map<string, Entry[]>>()
  /** One sequence for the table, never reset: a stale position never reaches a later entry. */
  lastSeq = 0
  /** Shared by the table's writers, as Redis keeps one fence per room for every server. */
  readonly fences = new EpochFences()
  /** The writers alive, each with what it is told when another goes. */
  readonly #alive = new Map<string, (() => void)[]>()

  alive(writer: string): void {
    if (!this.#alive.has(writer)) this.#alive.set(writer, [])
  }

  isAlive(writer: string): boolean {
    return this.#alive.has(writer)
  }

  onWriterGone(writer: string, listener: () => void): void {
    this.#alive.get(writer)?.push(listener)
  }

  /** `writer` died (or closed): the writers still alive hear of it. */
  lose(writer: string): void {
    if (!this.#alive.delete(writer)) return
    for (const listeners of this.#alive.values()) for (const listener of listeners) listener()
  }
}

/**
 * `UpdateJournal` in memory, one writer per server: an append is stored before it returns, a
 * position names each writer's last entry covered, and a trim drops exactly the entries at or
 * before it, so appends racing a trim stay.
 */
export class MemoryUpdateJournal implements UpdateJournal {
  readonly orphans: OrphanedEntries = {
    onWriterGone: (listener) => this.table.onWriterGone(this.writer, listener),
    read: async (room) => this.#read(room, (writer) => !this.table.isAlive(writer)),
  }

  constructor(
    private readonly writer: string = 'memory',
    private readonly table: MemoryJournalTable = new MemoryJournalTable(),
  ) {
    table.alive(writer)
  }

  append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition> {
    try {
      this.table.fences.pass(room, epoch)
    } catch (error) {
      return Promise.reject(error)
    }
    let writers = this.table.rooms.get(room)
    if (!writers) {
      writers = new Map()
      this.table.rooms.set(room, writers)
    }
    let entries = writers.get(this.writer)
    if (!entries) {
      entries = []
      writers.set(this.writer, entries)
    }
    const seq = ++this.table.lastSeq
    entries.push({ seq, update: update.slice() })
    return Promise.resolve(new Map([[this.writer, String(seq)]]))
  }

  async fence(room: string, epoch: number): Promise<void> {
    this.table.fences.pass(room, epoch)
  }

  async read(room: string): Promise<JournalContents> {
    return this.#read(room, () => true)
  }

  #read(room: string, include: (writer: string) => boolean): JournalContents {
    const updates: Uint8Array[] = []
    const position = new Map<string, string>()
    for (const [writer, entries] of this.table.rooms.get(room) ?? []) {
      const last = entries.at(-1)
      if (!last || !include(writer)) continue
      for (const { update } of entries) updates.push(update.slice())
      position.set(writer, String(last.seq))
    }
    return { updates, position }
  }

  async trim(room: string, position: JournalPosition, epoch?: number): Promise<void> {
    this.table.fences.pass(room, epoch)
    const writers = this.table.rooms.get(room)
    if (!writers) return
    for (const [writer, upTo] of position) {
      const entries = writers.get(writer)?.filter(({ seq }) => seq > Number(upTo))
      if (entries && entries.length > 0) writers.set(writer, entries)
      else writers.delete(writer)
    }
    if (writers.size === 0) this.table.rooms.delete(room)
  }

  async delete(room: string, epoch?: number): Promise<void> {
    this.table.fences.pass(room, epoch)
    this.table.rooms.delete(room)
  }

  async close(): Promise<void> {
    this.table.lose(this.writer)
  }
}
