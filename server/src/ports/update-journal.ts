/**
 * How far a room's journal reaches: for each writer (a server, or the one embedded file), the id
 * of the last entry covered. Opaque to the core, which only passes positions back to `trim`.
 */
export type JournalPosition = ReadonlyMap<string, string>

export interface JournalContents {
  /** Every update still journaled for the room, by any writer; each writer's in append order. */
  updates: Uint8Array[]
  /** The position just reached: trimming to it drops exactly these updates. */
  position: JournalPosition
  /** Damaged records the journal skipped, keeping those after them. */
  skipped?: number
}

/**
 * A per-room write-ahead log of applied updates, so a crash between snapshots loses nothing.
 * The server appends each update it applied from a client, trims what a saved snapshot holds,
 * and replays the rest on top of the snapshot when the room loads again.
 */
export interface UpdateJournal {
  /**
   * Appends an update this server applied. Called on the hot path: the write starts before this
   * returns (so a process killed right after keeps it) and the promise only reports the outcome:
   * the position of the new entry, or the error. With `epoch` (the room's owner's), refused with
   * `StaleEpochError` once the room is fenced at a later epoch, and nothing is written.
   */
  append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition>
  /**
   * Fences the room at `epoch`: from now on a write carrying an earlier epoch is refused. A new
   * owner fences before it reads, so whatever an earlier owner had confirmed is in its read, and
   * that owner confirms nothing more. Rejects with `StaleEpochError` if a later epoch fenced it.
   */
  fence(room: string, epoch: number): Promise<void>
  /** What is journaled for the room now, by every writer. Throws if the journal fails. */
  read(room: string): Promise<JournalContents>
  /** Removes every writer's entries of the room (the room was deleted); fenced as `append` is. */
  delete(room: string, epoch?: number): Promise<void>
  /**
   * Drops the entries at or before `position` (a saved snapshot holds them); later ones stay.
   * Fenced as `append` is: a stale owner's trim could drop what the next owner has not read.
   */
  trim(room: string, position: JournalPosition, epoch?: number): Promise<void>
  close(): Promise<void>
  /**
   * Optional: calls `listener` whenever the journal may have lost entries it had confirmed (its
   * link came back after a loss, and the store behind it may have restarted empty). The core then
   * saves every room whose journaled updates no snapshot holds yet.
   */
  onPossibleLoss?(listener: () => void): void
  /** Optional, for a journal several servers write: the entries of writers that are gone. */
  readonly orphans?: OrphanedEntries
}

/**
 * A server acknowledges an edit once its own journal entry is confirmed, and tells the other
 * servers holding the room a moment later: killed in between, its entry is the edit's only copy,
 * and no server replays it while the room stays loaded elsewhere. Each writer proves that it lives
 * (a lease); the servers holding a room adopt the entries of a writer that stopped proving it:
 * they read them (`read`), apply them, save a snapshot, and only then trim them.
 */
export interface OrphanedEntries {
  /**
   * Calls `listener` when a writer may have died: one that proved it lives stopped proving it, or
   * this journal's link came back after a gap (a writer may have come and gone unseen meanwhile).
   */
  onWriterGone(listener: () => void): void
  /**
   * The room's entries whose writers are gone (neither this journal's writer nor one that proved
   * lately that it lives), and the position covering them. Taking a live writer for a gone one
   * costs a read and nothing else: its entries apply again into a document that holds them.
   */
  read(room: string): Promise<JournalContents>
}
