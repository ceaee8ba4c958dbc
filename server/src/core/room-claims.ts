import { within } from '../deadline.js'
import type { Logger } from '../logger.js'
import type { OwnershipClaim, RoomOwner, RoomRegistry } from '../ports/room-registry.js'

/**
 * How long a claim's answer is reused. Far shorter than any lease (`REGISTRY_LEASE_MS` is 1 s at
 * least): an owner named this recently still owns the room, or fencing refuses it.
 */
const CLAIM_REUSE_MS = 500

export interface RoomClaimsOptions {
  registry: RoomRegistry
  logger: Logger
  /** The longest a claim, release or owner lookup waits for the registry. */
  waitMs: number
  /** This server's id, as the registry names owners. */
  serverId: string | undefined
}

/** A room this server holds, as a check of its ownership sees it. */
export interface HeldRoom {
  name: string
  /** The epoch this server owns it at; undefined once it is no longer loaded here. */
  epoch(): number | undefined
  /** Stops serving it here: another server owns it now. */
  lose(): void
}

/** This server's side of the registry's ownership of rooms: claims, releases and checks. */
export class RoomClaims {
  /** Claims asked of the registry, in flight or just answered, by room: shared by the joins of a burst. */
  readonly #claims = new Map<string, Promise<OwnershipClaim>>()

  constructor(private readonly options: RoomClaimsOptions) {}

  /**
   * The registry's claim of `name`, shared by every caller while it is in flight, and when it made
   * the room this server's for `CLAIM_REUSE_MS` after: a burst of joins (each client asks where the
   * room is served, then its load claims it) costs the registry one claim, not two per client. An
   * answer naming another owner is not kept: that owner may release the room the next moment
   * (draining), and a client sent back to it would be closed again. With `gone`, that owner is
   * known gone and the claim takes the room from it.
   */
  claim(name: string, gone?: RoomOwner): Promise<OwnershipClaim> {
    const shared = gone ? undefined : this.#claims.get(name)
    if (shared) return shared
    const { registry, waitMs } = this.options
    const claim = within(registry.claim(name, gone), waitMs, 'claiming the room')
    this.#claims.set(name, claim)
    const forget = () => {
      if (this.#claims.get(name) === claim) this.#claims.delete(name)
    }
    claim.then((answer) => (answer.owned ? setTimeout(forget, CLAIM_REUSE_MS).unref() : forget()), forget)
    return claim
  }

  /**
   * Where a client of `name` is served: null here (this server owns it, or the registry did not
   * answer), else its owner elsewhere. An owner that `unreachable` says is gone (nothing listens at
   * its address: its process exited) is replaced at once by this server.
   */
  async ownerElsewhere(name: string, unreachable: (owner: RoomOwner) => boolean): Promise<RoomOwner | null> {
    try {
      let claimed = await this.claim(name)
      if (!claimed.owned && unreachable(claimed.owner)) claimed = await this.claim(name, claimed.owner)
      return claimed.owned ? null : claimed.owner
    } catch (err) {
      this.options.logger.warn({ err, room: name }, 'claiming the room failed; it is served here')
      return null
    }
  }

  /** Gives the room up if this server still owns it (a failure: its server's lease ends it). */
  async release(name: string, epoch: number): Promise<void> {
    this.#claims.delete(name) // the next load claims it anew
    const { registry, waitMs, logger } = this.options
    await within(registry.release(name, epoch), waitMs, 'releasing the room').catch((err: unknown) =>
      logger.warn({ err, room: name }, 'release failed; the room stays ours until then'),
    )
  }

  /**
   * This server's lease ran out before its renewal (a stall, a registry cut off): each room it
   * holds may be another server's by now, which no write of its own has found fenced yet (a room
   * nobody writes to). Each is asked of the registry; one owned elsewhere, or by nobody, is given
   * up at once, and its clients come back to reach its owner.
   */
  async checkOwnership(rooms: HeldRoom[]): Promise<void> {
    const { registry, waitMs, logger, serverId } = this.options
    const unanswered: HeldRoom[] = []
    await Promise.all(
      rooms.map(async (room) => {
        const epoch = room.epoch()
        if (epoch === undefined) return
        const owner = await within(registry.ownerOf(room.name), waitMs, 'the owner lookup').catch(
          () => undefined,
        )
        if (owner === undefined) {
          unanswered.push(room)
          return
        }
        if (owner && owner.serverId === serverId && owner.epoch === epoch) return
        logger.warn({ room: room.name, owner }, 'another server owns the room now; closing its clients here')
        room.lose()
      }),
    )
    // Asked again until answered: a room nobody writes to meets no fence that would tell, and would
    // stay served here, as it was, beside the room at its new owner.
    if (unanswered.length > 0) setTimeout(() => void this.checkOwnership(unanswered), waitMs).unref()
  }
}
