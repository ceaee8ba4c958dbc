import { SnapshotConflictError, StaleEpochError } from '../errors.js'
import type { SnapshotHead } from '../ports/snapshot-store.js'

/**
 * Why a save at `epoch` expecting `expected` was refused, given what is stored: a later owner's
 * save (`StaleEpochError`: this owner must stop), else another version (`SnapshotConflictError`).
 */
export function refusedSave(
  room: string,
  current: SnapshotHead | null,
  expected: string | null,
  epoch: number,
): SnapshotConflictError | StaleEpochError {
  const stored = current?.epoch ?? 0
  if (epoch > 0 && stored > epoch) {
    return new StaleEpochError(`room ${room} was saved at epoch ${stored}, after ${epoch}`)
  }
  return new SnapshotConflictError(`room ${room} is at version ${current?.version ?? null}, not ${expected}`)
}
