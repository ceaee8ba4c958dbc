import type { Logger } from '../logger.js'
import {
  FAILURES_BEFORE_GIVING_UP,
  type HeldIncarnation,
  HeldRoomSweep,
  VISITS_AT_ONCE,
  visitRooms,
} from './held-room-sweep.js'

export { FAILURES_BEFORE_GIVING_UP, type HeldIncarnation }
/** How many rooms' incarnations are read from the snapshot store at once. */
export const CHECKS_AT_ONCE = VISITS_AT_ONCE

export interface MissedDeletionDeps {
  /** The room's current incarnation, as the snapshot store says (a tombstone moves it on). */
  storedGeneration(name: string): Promise<number>
  /** Incarnation `generation` of the room was deleted: drop it, if it is still held. */
  drop(name: string, generation: number): void
  logger: Logger
}

/**
 * One pass: drops each room whose incarnation the store has moved past (deleted elsewhere while
 * this server heard nothing), reading `CHECKS_AT_ONCE` at a time. Never rejects; resolves to the
 * rooms dropped and those the store did not answer for (all the rest, once it failed
 * `FAILURES_BEFORE_GIVING_UP` times in a row).
 */
export async function dropMissedDeletions(
  held: HeldIncarnation[],
  deps: MissedDeletionDeps,
): Promise<{ dropped: string[]; unanswered: HeldIncarnation[] }> {
  const dropped: string[] = []
  const unanswered = await visitRooms(held, async (room) => {
    if (await dropIfDeleted(room, deps)) dropped.push(room.name)
  })
  return { dropped, unanswered }
}

/** Drops the room if the store moved past its incarnation; rejects only if the store did not answer. */
async function dropIfDeleted(
  { name, generation }: HeldIncarnation,
  { storedGeneration, drop, logger }: MissedDeletionDeps,
): Promise<boolean> {
  if ((await storedGeneration(name)) <= generation) return false
  logger.warn(
    { room: name, generation },
    'the room was deleted while this server missed pub/sub messages; dropping it',
  )
  try {
    drop(name, generation)
    return true
  } catch (error) {
    logger.error({ err: error, room: name }, 'could not drop a room deleted elsewhere')
    return false
  }
}

export interface MissedDeletionChecksOptions extends MissedDeletionDeps {
  /** Whether incarnation `generation` of the room is still held here (else it needs no check). */
  isHeld(name: string, generation: number): boolean
  /** The first retry of the rooms the store did not answer for, doubling up to `retryMaxMs`. */
  retryBaseMs?: number
  retryMaxMs?: number
}

/**
 * After pub/sub may have missed messages, every held room is checked for a deletion it was not
 * told of: an idle room would otherwise serve its deleted content for as long as it is held, as
 * only a save meets the tombstone. The rooms the store did not answer for are checked again, with
 * backoff, until it does or they are no longer held (`HeldRoomSweep`).
 */
export class MissedDeletionChecks extends HeldRoomSweep {
  constructor(options: MissedDeletionChecksOptions) {
    super({
      ...options,
      visit: async (room) => {
        await dropIfDeleted(room, options)
      },
      lookingFor: 'a deletion pub/sub missed',
    })
  }
}
