import type { JournalPosition, UpdateJournal } from '../ports/update-journal.js'

const NOTHING: JournalPosition = new Map()

/** What a room journal reports of its writes. */
export interface JournalOutcomes {
  failed(error: unknown, action: 'append' | 'trim', room: string): void
  /** An append succeeded (called for each: keep it cheap). */
  appended(room: string): void
}

/** What a snapshot is about to hold of the journal: taken before encoding, passed to `trim`. */
export interface JournalMark {
  position: Promise<JournalPosition>
  /** Updates recorded (or replayed) up to the mark. */
  updates: number
}

/** What a room journal is built from. */
export interface RoomJournalInit {
  journal: UpdateJournal
  room: string
  /** What was replayed into the room when it loaded: none of it is in a snapshot yet. */
  replayed: { position: JournalPosition; updates: number }
  outcomes: JournalOutcomes
  /** Told of each recorded update: the room changed here, by a client of this server (webhooks). */
  onRecord?: () => void
}

/**
 * One loaded room's side of the update journal: it appends what the room applies from its
 * clients, and tells the snapshot writer which entries a snapshot holds, so trimming after the
 * save drops only those.
 */
export class RoomJournal {
  /** Position of this server's latest append that succeeded (appends settle in order). */
  #latestAppend: Promise<JournalPosition> = Promise.resolve(NOTHING)
  /** Updates replayed at load plus those recorded since; `#saved` of them are in a saved snapshot. */
  #recorded: number
  #saved = 0
  readonly room: string
  readonly #journal: UpdateJournal
  /** The entries replayed into the room when it loaded. */
  readonly #replayed: JournalPosition
  readonly #outcomes: JournalOutcomes
  readonly #onRecord: () => void

  constructor({ journal, room, replayed, outcomes, onRecord }: RoomJournalInit) {
    this.room = room
    this.#journal = journal
    this.#replayed = replayed.position
    this.#recorded = replayed.updates
    this.#outcomes = outcomes
    this.#onRecord = onRecord ?? (() => {})
  }

  /** Journaled updates that no saved snapshot holds yet. */
  get backlog(): number {
    return this.#recorded - this.#saved
  }

  /** Appends an update the room just applied (from a client of this server). */
  record(update: Uint8Array): void {
    this.#onRecord()
    this.#recorded++
    const previous = this.#latestAppend
    this.#latestAppend = this.#journal.append(this.room, update).then(
      (position) => {
        this.#outcomes.appended(this.room)
        return position
      },
      (error: unknown) => {
        this.#outcomes.failed(error, 'append', this.room)
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
  mark(): JournalMark {
    return {
      position: this.#latestAppend.then((own) => new Map([...this.#replayed, ...own])),
      updates: this.#recorded,
    }
  }

  /**
   * Called once a snapshot holding `mark` is saved: drops those entries. A failed trim only means
   * they replay again (into a document that already holds them).
   */
  async trim(mark: JournalMark): Promise<void> {
    this.#saved = Math.max(this.#saved, mark.updates)
    try {
      const position = await mark.position
      if (position.size > 0) await this.#journal.trim(this.room, position)
    } catch (error) {
      this.#outcomes.failed(error, 'trim', this.room)
    }
  }
}
