import { StaleEpochError } from '../errors.js'
import type { JournalPosition, UpdateJournal } from '../ports/update-journal.js'

/** What a room journal reports of its writes. */
export interface JournalOutcomes {
  /** `first`: the first failure of this room's journal since it last succeeded (log that one). */
  failed(error: unknown, action: 'append' | 'trim', room: string, first: boolean): void
  /** An append succeeded (called for each: keep it cheap). */
  appended(room: string): void
}

/** What a snapshot is about to hold of the journal: taken just before encoding. */
export interface JournalMark {
  /** Every update recorded up to this sequence number is applied whole, so the snapshot holds it. */
  readonly through: number
  /** The confirmed journal entries among those: what trimming after the save drops. */
  readonly position: JournalPosition
}

/** What a room journal is built from. */
export interface RoomJournalInit {
  journal: UpdateJournal
  room: string
  /** The room's incarnation key in the journal (`incarnationKey`); default: the room's name. */
  key?: string
  /** What was replayed into the room when it loaded: journaled (so durable), in no snapshot yet. */
  replayed: { position: JournalPosition; updates: number }
  outcomes: JournalOutcomes
  /** An append failed: what it held is durable only once a snapshot holds it, so save one now. */
  onAppendFailed: () => void
  /**
   * The epoch this server owns the room at: every write carries it. Unset: it writes unfenced (a
   * copy of a room another server owns).
   */
  epoch?: number
  /**
   * A write was refused as stale: a later owner took the room. What was refused is never made
   * durable here (no snapshot stands in for it): the room must stop at once.
   */
  onStale?: (error: StaleEpochError) => void
  /** Told of each recorded update: the room changed here, by a client of this server (webhooks). */
  onRecord?: () => void
}

/** A confirmed append not yet trimmed. */
interface Confirmed {
  seq: number
  position: JournalPosition
}

interface Waiter {
  seq: number
  resolve: () => void
}

/**
 * One loaded room's side of the update journal, and the keeper of its durability contract.
 * Each update the room applies from its clients gets a sequence number and is appended. It is
 * durable once its append is confirmed, or once a saved snapshot holds it: `durable()` resolves
 * when everything recorded so far is. A failed append asks for a snapshot at once. Snapshots never
 * wait on the journal: the writer takes a `mark()` synchronously and reports `saved(mark)`; the
 * trim that follows is best-effort and runs on its own.
 */
export class RoomJournal {
  readonly room: string
  readonly #key: string
  /** Sequence number of the latest recorded update (replayed ones count from 1). */
  #recorded: number
  /** Every update up to this sequence number is in a saved snapshot. */
  #savedThrough = 0
  /** Appends still waiting for the journal's answer, in sequence order (a Set keeps insertion order). */
  readonly #inFlight = new Set<number>()
  /** Appends that failed and that no saved snapshot holds yet. */
  readonly #failed = new Set<number>()
  /** Recorded updates still being applied across turns: no snapshot can hold them whole yet. */
  readonly #applying = new Set<number>()
  /**
   * Confirmed appends not yet in a saved snapshot, in sequence order, each kept only while a mark
   * could stop at it (see `#confirm`): at most one more than the updates still being applied.
   */
  #confirmed: Confirmed[] = []
  #waiters: Waiter[] = []
  /**
   * Other writers' entries the room holds (replayed at load, or adopted from a writer that is
   * gone), each writer's dropped from here once a trim reached it.
   */
  readonly #othersHeld: Map<string, string>
  /** The writer this server appends as, once an append told it. */
  #ownWriter: string | undefined
  #trimming = false
  /** The latest write failed: further failures are counted, not logged again. */
  #failing = false
  #nextTrim: JournalPosition | null = null
  readonly #journal: UpdateJournal
  readonly #outcomes: JournalOutcomes
  readonly #onAppendFailed: () => void
  readonly #onRecord: () => void
  readonly #epoch: number | undefined
  readonly #onStale: (error: StaleEpochError) => void

  constructor(init: RoomJournalInit) {
    const { journal, room, key, replayed, outcomes, onAppendFailed, onRecord } = init
    this.#epoch = init.epoch
    this.#onStale = init.onStale ?? (() => {})
    this.room = room
    this.#key = key ?? room
    this.#journal = journal
    this.#othersHeld = new Map(replayed.position)
    this.#recorded = replayed.updates
    this.#outcomes = outcomes
    this.#onAppendFailed = onAppendFailed
    this.#onRecord = onRecord ?? (() => {})
  }

  /** Journaled updates that no saved snapshot holds yet. */
  get backlog(): number {
    return this.#recorded - this.#savedThrough
  }

  /** Whether an append failed that no saved snapshot holds yet: the room cannot confirm it now. */
  get hasFailedAppends(): boolean {
    return this.#failed.size > 0
  }

  /** Whether every recorded update is durable now. */
  get isDurable(): boolean {
    return this.#durableThrough() >= this.#recorded
  }

  /** Appends an update the room just applied whole (from a client of this server). */
  record(update: Uint8Array): void {
    this.#append(update)
  }

  /**
   * Appends an update the room is about to apply (across several turns, or once its append is
   * confirmed): snapshots taken before `applied()` is called do not count it as held. `appended`
   * settles with whether the journal confirmed it (false: it failed, and only a snapshot taken
   * after `applied()` makes it durable).
   */
  recordBeforeApplying(update: Uint8Array): { applied(): void; appended: Promise<boolean> } {
    const { seq, appended } = this.#append(update)
    this.#applying.add(seq)
    return { applied: () => this.#applying.delete(seq), appended }
  }

  /** Resolves once every update recorded so far is durable (journaled and confirmed, or saved). */
  durable(): Promise<void> {
    const seq = this.#recorded
    if (this.#durableThrough() >= seq) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push({ seq, resolve }))
  }

  /** What a snapshot encoded now holds. Synchronous: a save never waits on the journal. */
  mark(): JournalMark {
    let through = this.#recorded
    for (const seq of this.#applying) through = Math.min(through, seq - 1)
    let own: JournalPosition = new Map()
    for (const entry of this.#confirmed) if (entry.seq <= through) own = entry.position
    return { through, position: new Map([...this.#othersHeld, ...own]) }
  }

  /**
   * The room now holds the entries up to `position` of writers that are gone (it applied them
   * whole): the next snapshot holds them, and its trim drops them.
   */
  adopted(position: JournalPosition): void {
    for (const [writer, id] of position) this.#othersHeld.set(writer, id)
  }

  /**
   * A saved snapshot holds everything the room holds now: the other writers' entries it holds are
   * trimmed (no save is owed that would trim them).
   */
  trimHeld(): void {
    if (this.#othersHeld.size > 0) this.#trim(new Map(this.#othersHeld))
  }

  /**
   * A snapshot holding `mark` is saved: what it holds is durable whatever the journal did, and its
   * entries are trimmed in the background (a failed trim only means they replay again, into a
   * document that already holds them).
   */
  saved(mark: JournalMark): void {
    if (mark.through > this.#savedThrough) {
      this.#savedThrough = mark.through
      for (const seq of this.#inFlight) if (seq <= mark.through) this.#inFlight.delete(seq)
      for (const seq of this.#failed) if (seq <= mark.through) this.#failed.delete(seq)
      this.#confirmed = this.#confirmed.filter((entry) => entry.seq > mark.through)
      this.#release()
    }
    if (mark.position.size > 0) this.#trim(mark.position)
  }

  #append(update: Uint8Array): { seq: number; appended: Promise<boolean> } {
    this.#onRecord()
    const seq = ++this.#recorded
    this.#inFlight.add(seq)
    const appended = this.#journal.append(this.#key, update, this.#epoch).then(
      (position) => {
        this.#failing = false
        this.#ownWriter ??= position.keys().next().value
        this.#outcomes.appended(this.room)
        if (!this.#inFlight.delete(seq)) return true // a saved snapshot holds it already
        this.#confirm({ seq, position })
        this.#release()
        return true
      },
      (error: unknown) => {
        if (error instanceof StaleEpochError) {
          // Stays in flight, never durable here: the room stops and its clients resend elsewhere.
          this.#onStale(error)
          return false
        }
        this.#reportFailure(error, 'append')
        if (!this.#inFlight.delete(seq)) return false
        this.#failed.add(seq)
        this.#onAppendFailed()
        return false
      },
    )
    return { seq, appended }
  }

  /**
   * Keeps `entry` for `mark`, which takes the latest confirmed position at or below what a snapshot
   * holds whole. A position covers every earlier entry of this server, so an entry is only worth
   * keeping while an update between it and the next is still being applied (a mark could stop
   * there): the rest go, whichever confirmation made them redundant. Kept one per update, they
   * piled up until a save went through: for as long as the snapshot store was down, a heap object
   * per edit.
   */
  #confirm(entry: Confirmed): void {
    const entries = this.#confirmed
    entries.push(entry)
    let kept = 0
    for (let index = 0; index < entries.length; index++) {
      const current = entries[index] as Confirmed
      const next = entries[index + 1]
      // Out of order (no adapter confirms so): kept, as the next one does not cover it.
      if (next === undefined || next.seq <= current.seq || this.#applyingWithin(current.seq, next.seq))
        entries[kept++] = current
    }
    entries.length = kept
  }

  /** Whether an update numbered after `from` and up to `to` is still being applied. */
  #applyingWithin(from: number, to: number): boolean {
    for (const seq of this.#applying) if (seq > from && seq <= to) return true
    return false
  }

  #reportFailure(error: unknown, action: 'append' | 'trim'): void {
    this.#outcomes.failed(error, action, this.room, !this.#failing)
    this.#failing = true
  }

  /** The highest sequence number up to which every update is durable. */
  #durableThrough(): number {
    let through = this.#recorded
    // Appends are made in sequence order and the Set keeps it: the first in flight is the lowest.
    for (const seq of this.#inFlight) {
      through = Math.min(through, seq - 1)
      break
    }
    for (const seq of this.#failed) through = Math.min(through, seq - 1)
    return Math.max(through, this.#savedThrough)
  }

  #release(): void {
    if (this.#waiters.length === 0) return
    const through = this.#durableThrough()
    let released = 0
    while (released < this.#waiters.length && (this.#waiters[released] as Waiter).seq <= through) {
      ;(this.#waiters[released] as Waiter).resolve()
      released++
    }
    if (released > 0) this.#waiters = this.#waiters.slice(released)
  }

  /**
   * One trim at a time; a trim asked for meanwhile joins any other waiting, each writer's position
   * the latest asked for (positions only move on: a mark holds what every earlier one held).
   */
  #trim(position: JournalPosition): void {
    this.#nextTrim = this.#nextTrim ? new Map([...this.#nextTrim, ...position]) : position
    if (this.#trimming) return
    this.#trimming = true
    void (async () => {
      while (this.#nextTrim) {
        const next = this.#nextTrim
        this.#nextTrim = null
        try {
          await this.#journal.trim(this.#key, next, this.#epoch)
          // What the trim reached is trimmed: the very entry, or this server's own later one in the
          // same stream (one file journal). Entries adopted meanwhile stay until a trim reaches them.
          for (const [writer, id] of next) {
            if (this.#othersHeld.get(writer) === id || writer === this.#ownWriter)
              this.#othersHeld.delete(writer)
          }
        } catch (error) {
          if (error instanceof StaleEpochError) this.#onStale(error)
          else this.#reportFailure(error, 'trim')
        }
      }
      this.#trimming = false
    })()
  }
}
