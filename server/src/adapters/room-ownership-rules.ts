import type { OwnershipClaim, RoomOwner } from '../ports/room-registry.js'

/** A room's owner as a registry stores it: who, at which epoch, from which start of its server. */
export interface OwnerRecord extends RoomOwner {
  /** The owning server's start (`boot`): a restarted server under the same id is another owner. */
  boot: string
  /** Given up (`release`): the next claim takes it at once, at the next epoch. */
  released: boolean
}

/** A server's own lease, which all the rooms it owns live by: renewed while it runs. */
export interface ServerLease {
  boot: string
  expiresAt: number
}

/** Whether `record`'s server still owns its room: not released, and that start's lease is live. */
export function isLiveOwner(record: OwnerRecord, lease: ServerLease | undefined, now: number): boolean {
  return !record.released && lease !== undefined && lease.boot === record.boot && lease.expiresAt > now
}

/** What a claim comes to, before it is written: the room is this server's already, or is taken, or not. */
export type ClaimStep =
  | { kind: 'held'; claim: OwnershipClaim }
  /** Write this server as the owner at `epoch`, only if the stored epoch is still `expected` (null: no record). */
  | { kind: 'take'; epoch: number; expected: number | null }

/**
 * Decides a claim by `self` (its id and start) of a room whose stored owner is `record` (null:
 * never owned), its lease judged `live`. A live owner keeps it, unless `gone` names it at its
 * epoch (known to be gone before its lease lapses); the same start of this server holds it already.
 */
export function claimStep(
  record: OwnerRecord | null,
  live: boolean,
  self: { serverId: string; boot: string },
  gone?: RoomOwner,
): ClaimStep {
  if (!record) return { kind: 'take', epoch: 1, expected: null }
  const owner: RoomOwner = {
    serverId: record.serverId,
    internalAddress: record.internalAddress,
    epoch: record.epoch,
  }
  if (live && record.serverId === self.serverId && record.boot === self.boot) {
    return { kind: 'held', claim: { owned: true, epoch: record.epoch } }
  }
  const knownGone = gone !== undefined && gone.serverId === record.serverId && gone.epoch === record.epoch
  if (live && !knownGone) return { kind: 'held', claim: { owned: false, owner } }
  return { kind: 'take', epoch: record.epoch + 1, expected: record.epoch }
}
