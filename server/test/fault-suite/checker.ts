import type { DeleteRecord, EditRecord, Ledger } from './ledger.js'

/** What the servers hold of each room: per server, its edit ids in document order (null: no copy). */
export type RoomViews = Map<string, (string[] | null)[]>

/** What must be true of one edit after the heal. */
export type Expectation = 'present' | 'absent' | 'either'

export interface Verdict {
  /** Edits whose sync-status answer came. */
  acknowledged: number
  mustBePresent: number
  mustBeAbsent: number
  /** Edits of the writers found on some server. */
  found: number
  /** Acknowledged, not deleted since, and on no server. */
  lost: number
  /** Rooms whose servers do not all hold the same document. */
  diverged: number
  /** Edits that one server holds more than once. */
  duplicated: number
  /** Acknowledged before a deletion that succeeded, and on a server again. */
  resurrected: number
  /** Ids on a server that no writer made in that room. */
  unknown: number
  /** Up to three of each kind, to start looking from. */
  examples: string[]
}

/**
 * What an edit must be after the heal, by the rules of acknowledgement and deletion:
 * - never acknowledged: either (the session was abandoned);
 * - acknowledged before a deletion of its room was sent, and that deletion succeeded: absent;
 * - its session overlapped a deletion (connected before it ended, answered after it began), or a
 *   deletion sent after the answer failed (it may have done part of its work): either;
 * - otherwise: present.
 */
export function expectationOf(edit: EditRecord, deletes: DeleteRecord[]): Expectation {
  const acked = edit.ackedAt
  if (acked === null) return 'either'
  const mine = deletes.filter((d) => d.room === edit.room)
  if (mine.some((d) => d.ok && d.startedAt > acked)) return 'absent'
  const overlapping = mine.some((d) => d.startedAt <= acked && edit.sessionStartedAt <= d.endedAt)
  const failedLater = mine.some((d) => !d.ok && d.startedAt > acked)
  return overlapping || failedLater ? 'either' : 'present'
}

/** Compares what the servers hold with what the writers were told and what was deleted. */
export function check(ledger: Ledger, views: RoomViews): Verdict {
  const verdict: Verdict = {
    acknowledged: 0,
    mustBePresent: 0,
    mustBeAbsent: 0,
    found: 0,
    lost: 0,
    diverged: 0,
    duplicated: 0,
    resurrected: 0,
    unknown: 0,
    examples: [],
  }
  const shown = new Map<string, number>()
  const example = (text: string) => {
    const kind = text.split(' ')[0] ?? ''
    if ((shown.get(kind) ?? 0) >= 3) return
    shown.set(kind, (shown.get(kind) ?? 0) + 1)
    verdict.examples.push(text)
  }
  /** room → the ids any of its copies holds */
  const held = new Map<string, Set<string>>()
  const duplicated = new Set<string>()
  for (const [room, copies] of views) {
    const present = copies.filter((copy): copy is string[] => copy !== null)
    if (!agree(copies)) {
      verdict.diverged++
      example(
        `diverged ${room}: ${copies.map((copy) => (copy ? `${copy.length} ids` : 'no copy')).join(' / ')}`,
      )
    }
    const inRoom = new Set<string>()
    held.set(room, inRoom)
    for (const copy of present) {
      const seen = new Set<string>()
      for (const id of copy) {
        if (seen.has(id) && !duplicated.has(id)) {
          duplicated.add(id)
          example(`duplicated ${id} in ${room}`)
        }
        seen.add(id)
        inRoom.add(id)
      }
    }
    for (const id of inRoom) {
      if (ledger.edits.get(id)?.room === room) verdict.found++
      else {
        verdict.unknown++
        example(`unknown ${id} in ${room}`)
      }
    }
  }
  verdict.duplicated = duplicated.size
  for (const [id, edit] of ledger.edits) {
    if (edit.ackedAt !== null) verdict.acknowledged++
    const inRoom = held.get(edit.room)
    if (!inRoom) continue
    const expected = expectationOf(edit, ledger.deletes)
    if (expected === 'present') {
      verdict.mustBePresent++
      if (!inRoom.has(id)) {
        verdict.lost++
        example(`lost ${id} (acknowledged at ${ledger.since(edit.ackedAt ?? 0)})`)
      }
    } else if (expected === 'absent') {
      verdict.mustBeAbsent++
      if (inRoom.has(id)) {
        verdict.resurrected++
        example(`resurrected ${id} (acknowledged at ${ledger.since(edit.ackedAt ?? 0)})`)
      }
    }
  }
  return verdict
}

/** Whether a verdict shows no fault of the servers. */
export function isClean(verdict: Verdict): boolean {
  return (
    verdict.lost === 0 &&
    verdict.diverged === 0 &&
    verdict.duplicated === 0 &&
    verdict.resurrected === 0 &&
    verdict.unknown === 0
  )
}

/**
 * Whether some server holds the room and every copy held holds the same ids in the same order. A
 * room has one owner (issue #48), so usually one copy; two that differ are two owners' doing.
 */
export function agree(copies: (string[] | null)[]): boolean {
  const present = copies.filter((copy): copy is string[] => copy !== null)
  const [first] = present
  return (
    first !== undefined &&
    present.every((copy) => copy.length === first.length && copy.every((id, i) => id === first[i]))
  )
}
