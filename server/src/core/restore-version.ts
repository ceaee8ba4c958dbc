import { within } from '../deadline.js'
import { fromSnapshotStore, RoomDeletedError, RoomMovedError, VersionNotRestorableError } from '../errors.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { EventStream } from './event-stream.js'
import type { RoomHold } from './room-manager.js'

export interface RestoreVersionDeps {
  /** Holds the room, loading it if need be (`RoomManager.acquire`). */
  hold: (room: string) => Promise<RoomHold>
  /** Saves the room now if it has unsaved changes (`RoomManager.save`). */
  save: (room: string) => Promise<void>
  snapshots: SnapshotStore
  /** Told of each restore (`document.restored`). */
  events: Pick<EventStream, 'emit'>
  /** The longest the restore waits to be journaled, then saved as a version of its own. */
  saveWaitMs: number
}

export interface RestoreOutcome {
  /** The version restored. */
  restored: string
  /** The newest saved version once the restore is saved (it holds the restore), or null if not saved in time. */
  version: string | null
  /** False: applied, not saved within `saveWaitMs` (it is saved once the store answers). */
  saved: boolean
}

/**
 * Makes the live room saved version `id`'s content through one ordinary update (`restoreUpdate`),
 * applied as a client's edit: the same checks and ceilings, journaled, sent to every client here
 * and on the other servers, so offline copies merge onto it. Then saved at once, so the restore is
 * a version of its own (restoring the version before it undoes it), and `document.restored` sent.
 * Rejects with `SnapshotVersionNotFoundError` for an unknown id, `VersionNotRestorableError` for a
 * tombstone or a version of an earlier incarnation (the room was deleted since: its content is not
 * in the new one's history, so no update of it can bring it back), `RoomDeletedError` when the room
 * is deleted while it restores (the deletion wins), and as a client's update would.
 */
export async function restoreVersion(
  deps: RestoreVersionDeps,
  name: string,
  id: string,
): Promise<RestoreOutcome> {
  const version = await fromSnapshotStore(deps.snapshots.readVersion(name, id))
  if (version.deleted) {
    throw new VersionNotRestorableError(`version ${id} is the room's deletion: it holds no document`)
  }
  const hold = await deps.hold(name)
  try {
    if (hold.generation !== version.generation) {
      throw new VersionNotRestorableError(
        `version ${id} belongs to an earlier incarnation of the room (it was deleted since); read it with …/versions/${id}/document and write what you need with POST …/update`,
      )
    }
    const { room } = hold
    // In one step of the room's mailbox, applied, saved and told, each restore made from the room
    // the one before left, and saved as a version of its own (`Room.restore`).
    const outcome = await room.restore(version.state, { kind: 'restore', version: id }, async () => {
      const saved = await within(
        room.durable().then(() => deps.save(name)),
        deps.saveWaitMs,
        'saving the restore',
      ).then(
        () => true,
        // Past the wait, or the store failing: applied and journaled, and the writer retries the save.
        () => false,
      )
      const newest = saved
        ? await deps.snapshots.listVersions(name, { limit: 1 }).then(
            (page) => page.versions[0]?.id,
            () => null, // restored and saved all the same
          )
        : null
      // A deletion that met the restore wins: one outcome, never a restore of a room that is gone.
      if (hold.deleted()) return null
      deps.events.emit({ type: 'document.restored', room: name, version: id, at: Date.now() })
      return { restored: id, version: newest ?? null, saved }
    })
    if (outcome) return outcome
    if (hold.deleted() || outcome === null)
      throw new RoomDeletedError(`room ${name} was deleted while version ${id} was restored`)
    throw new RoomMovedError(`room ${name} is served by another server now; retry the restore`)
  } finally {
    hold.release()
  }
}
