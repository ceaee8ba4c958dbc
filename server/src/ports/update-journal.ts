/**
 * How far a room's journal reaches: for each of its streams, the id of the last entry covered. A
 * room has one stream, which its owner appends to; a journal an earlier version wrote may still
 * hold a stream per server, read and trimmed with it. Opaque to the core, which only passes
 * positions back to `trim`.
 */
export type JournalPosition = ReadonlyMap<string, string>

export interface JournalContents {
  /** Every update still journaled for the room, each stream's in append order. */
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
  /** What is journaled for the room now. Throws if the journal fails. */
  read(room: string): Promise<JournalContents>
  /** Removes the room's entries (the room was deleted); fenced as `append` is. */
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
}
