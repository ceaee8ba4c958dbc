import { LRUCache } from 'lru-cache'
import { StaleEpochError } from '../errors.js'

/**
 * Rooms whose fence an embedded store remembers. A room past it loses its fence (its oldest
 * first); the embedded stores serve one process, where an owner goes stale only when a room is
 * taken again while an earlier `Room` of it still finishes a save, which is moments, not the
 * time it takes 100,000 other rooms to be fenced.
 */
const REMEMBERED_ROOMS = 100_000

/**
 * The last epoch each room was written or fenced at, for the stores that keep their fence in this
 * process (the memory and file adapters); Redis and S3 keep theirs beside the room's data.
 */
export class EpochFences {
  readonly #epochs = new LRUCache<string, number>({ max: REMEMBERED_ROOMS })

  /**
   * Lets a write at `epoch` through, raising the room's fence to it; throws `StaleEpochError`
   * when a later epoch passed. A write without an epoch is not fenced.
   */
  pass(room: string, epoch: number | undefined): void {
    if (epoch === undefined) return
    const fenced = this.#epochs.get(room) ?? 0
    if (fenced > epoch) throw staleEpoch(room, epoch, fenced)
    if (fenced < epoch) this.#epochs.set(room, epoch)
  }
}

/** The refusal of a write at `epoch` in a room fenced at `fenced`. */
export function staleEpoch(room: string, epoch: number, fenced: number): StaleEpochError {
  return new StaleEpochError(`room ${room} is owned at epoch ${fenced} now, not ${epoch}`)
}
