import type { JournalPosition, UpdateJournal } from '../ports/update-journal.js'

const NOTHING: JournalPosition = new Map()

/** What a room journal reports of its writes. */
export interface JournalOutcomes {
  failed(error: unknown, action: 'append' | 'trim', room: string): void
  /** An append succeeded (called for each: keep it cheap). */
  appended(room: string): void
}

/**
 * One loaded room's side of the update journal: it appends what the room applies from its
 * clients, and tells the snapshot writer which entries a snapshot holds, so trimming after the
 * save drops only those.
 */
export class RoomJournal {
  /** Position of this server's latest append that succeeded (appends settle in order). */
  #latestAppend: Promise<JournalPosition> = Promise.resolve(NOTHING)

  constructor(
    private readonly journal: UpdateJournal,
    readonly room: string,
    /** The entries replayed into the room when it loaded. */
    private readonly replayed: JournalPosition,
    private readonly outcomes: JournalOutcomes,
    /** Told of each recorded update: the room changed here, by a client of this server. */
    private readonly onRecord: () => void = () => {},
  ) {}

  /** Appends an update the room just applied (from a client of this server). */
  record(update: Uint8Array): void {
    this.onRecord()
    const previous = this.#latestAppend
    this.#latestAppend = this.journal.append(this.room, update).then(
      (position) => {
        this.outcomes.appended(this.room)
        return position
      },
      (error: unknown) => {
        this.outcomes.failed(error, 'append', this.room)
        return previous
      },
    )
  }

  /** Resolves once every append made so far has settled (a failed one is logged, not retried). */
  settled(): Promise<void> {
    return this.#latestAppend.then(() => undefined)
  }

  /**
   * Every entry the room holds now. Taken just before encoding a snapshot: the value carries the
   * position of the appends made so far, never of those made while the snapshot is saved.
   */
  mark(): Promise<JournalPosition> {
    return this.#latestAppend.then((own) => new Map([...this.replayed, ...own]))
  }

  /** Drops what a saved snapshot holds; a failed trim only means those entries replay again. */
  async trim(mark: Promise<JournalPosition>): Promise<void> {
    try {
      const position = await mark
      if (position.size > 0) await this.journal.trim(this.room, position)
    } catch (error) {
      this.outcomes.failed(error, 'trim', this.room)
    }
  }
}
