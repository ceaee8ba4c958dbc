import type { Logger } from '../logger.js'

/** How many rooms' incarnations are read from the snapshot store at once. */
export const CHECKS_AT_ONCE = 8

/** A room held here, and which incarnation of it. */
export interface HeldIncarnation {
  name: string
  generation: number
}

export interface MissedDeletionCheck {
  held: HeldIncarnation[]
  /** The room's current incarnation, as the snapshot store says (a tombstone moves it on). */
  storedGeneration(name: string): Promise<number>
  /** Incarnation `generation` of the room was deleted: drop it, if it is still held. */
  drop(name: string, generation: number): void
  logger: Logger
}

/**
 * After pub/sub may have missed messages: drops each held room whose incarnation the store has
 * moved past (deleted elsewhere while this server heard nothing). An idle room would otherwise
 * serve its deleted content for as long as it is held, as only a save meets the tombstone. A
 * room the store does not answer for now stays: its next save meets the tombstone all the same.
 * Resolves to the rooms dropped.
 */
export async function dropMissedDeletions(check: MissedDeletionCheck): Promise<string[]> {
  const { held, storedGeneration, drop, logger } = check
  const dropped: string[] = []
  let unanswered = 0
  const queue = [...held]
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      try {
        if ((await storedGeneration(next.name)) <= next.generation) continue
      } catch {
        unanswered++
        continue
      }
      logger.warn(
        { room: next.name, generation: next.generation },
        'the room was deleted while this server missed pub/sub messages; dropping it',
      )
      drop(next.name, next.generation)
      dropped.push(next.name)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, queue.length) }, worker))
  if (unanswered > 0) {
    logger.warn(
      { rooms: unanswered },
      'could not check some rooms for a missed deletion; their next save will',
    )
  }
  return dropped
}
