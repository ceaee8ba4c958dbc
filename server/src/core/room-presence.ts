import { decodeAwarenessUpdate, encodeAwarenessEntries } from '../protocol/codec.js'
import type { MemoryCharges } from './memory-budget.js'
import { PresenceOwners } from './presence-owners.js'
import { PresenceTable } from './presence-table.js'
import type { RoomMember } from './room-member.js'

/**
 * A room's presence: who is here (`PresenceTable`), which connection speaks for each id (an id's
 * first write is checked against it), all charged to the server's memory budget until released.
 */
export class RoomPresence {
  readonly table: PresenceTable
  readonly #owners = new PresenceOwners<RoomMember>()
  #released = false

  constructor(
    private readonly memory: MemoryCharges,
    private readonly maxBytes: number,
  ) {
    // Uncharged whole at release: a frame handled after it charges nothing more.
    this.table = new PresenceTable((bytes) => {
      if (!this.#released) memory.charge('presence', bytes)
    })
  }

  /** The connection that speaks for presence id `clientId`, if one does. */
  ownerOf(clientId: number): RoomMember | undefined {
    return this.#owners.ownerOf(clientId)
  }

  /**
   * A connection's presence message. It speaks for the ids it introduced, not for the others'
   * presence its provider sends back (y-websocket echoes every presence it hears).
   */
  received(connection: RoomMember, update: Uint8Array): void {
    const entries = decodeAwarenessUpdate(update, this.maxBytes, true)
    connection.claimAwarenessClients(this.#owners.saw(entries, connection))
    this.table.apply(entries)
  }

  /** `connection` left: the presence it owned goes (no ghost cursors); the frame that tells the others, or null. */
  left(connection: RoomMember): Uint8Array | null {
    this.#owners.release(connection, connection.awarenessClientIds)
    const removed = this.table.remove(connection.awarenessClientIds)
    return removed.length > 0 ? encodeAwarenessEntries(removed) : null
  }

  release(): void {
    this.#released = true
    this.memory.charge('presence', -this.table.bytes)
  }
}
