import type { Logger } from '../logger.js'
import type { OrphanedEntries } from '../ports/update-journal.js'
import type { CoreMetrics } from './core-metrics.js'
import { type HeldIncarnation, HeldRoomSweep } from './held-room-sweep.js'
import { incarnationKey } from './incarnation.js'
import type { Room } from './room.js'
import type { RoomJournal } from './room-journal.js'
import type { SnapshotWriter } from './snapshot-writer.js'

/** What adopting touches of a room held here. */
export interface AdoptingRoom {
  room: Pick<Room, 'absorbOrphaned'>
  journal: Pick<RoomJournal, 'adopted' | 'trimHeld'>
  writer: Pick<SnapshotWriter, 'dirty' | 'saveSoon'>
}

export interface OrphanAdoptionDeps {
  orphans: OrphanedEntries
  /** Incarnation `generation` of the room, if it is held here and not being deleted. */
  held(name: string, generation: number): AdoptingRoom | undefined
  metrics: Pick<CoreMetrics, 'journalAdopted' | 'journalSkipped'>
  logger: Logger
}

/**
 * Adopts into each room held here what servers that are gone journaled of it: a server killed
 * between acknowledging an edit and publishing it leaves the edit in its journal alone, and the
 * servers that keep the room loaded never replay it (only a load does). Each room's entries are
 * applied, then saved at once, and trimmed only once a saved snapshot holds them.
 */
export function orphanAdoption(deps: OrphanAdoptionDeps): HeldRoomSweep {
  return new HeldRoomSweep({
    visit: (room) => adopt(room, deps),
    isHeld: (name, generation) => deps.held(name, generation) !== undefined,
    lookingFor: 'journal entries of a server that is gone',
    logger: deps.logger,
  })
}

async function adopt(
  { name, generation }: HeldIncarnation,
  { orphans, held, metrics, logger }: OrphanAdoptionDeps,
): Promise<void> {
  const { updates, position } = await orphans.read(incarnationKey(name, generation))
  const target = held(name, generation)
  if (!target || position.size === 0) return
  const changed = await target.room.absorbOrphaned(updates, skippedRecord({ metrics, logger }, name))
  if (changed === null) return // unloaded meanwhile: the entries wait for the room's next load
  target.journal.adopted(position)
  metrics.journalAdopted.inc(updates.length)
  // A change is saved now. Entries the room held already go with its next save, due anyway if it
  // is dirty, or at once if its last saved snapshot holds the whole room.
  if (changed) {
    target.writer.saveSoon()
    logger.warn(
      { room: name, updates: updates.length, writers: [...position.keys()] },
      'adopted the journal entries of a server that is gone (edits it may have told no one); saving them',
    )
  } else if (!target.writer.dirty) target.journal.trimHeld()
}

/**
 * Only applied updates are journaled, so a record that cannot be read or applied is damage: it is
 * counted and logged, and the records after it still apply (at load and on adoption alike).
 */
export function skippedRecord(
  { metrics, logger }: { metrics: Pick<CoreMetrics, 'journalSkipped'>; logger: Logger },
  room: string,
): (error: unknown) => void {
  return (error) => {
    metrics.journalSkipped.inc()
    logger.error({ err: error, room }, 'skipped a journal record that does not apply')
  }
}
