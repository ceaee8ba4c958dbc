import type { Capabilities } from '../protocol/capabilities.js'
import type { AwarenessEntry } from '../protocol/codec.js'

/**
 * What a room needs of one member (a client's connection): the two sides meet only through this
 * file and `MemberRoom`, so `room.ts` and `connection.ts` never import each other.
 */
export interface RoomMember {
  /** The connection's id; with `identity`, what the room stamps on the events it relays. */
  readonly id: string
  /** Who it is: `userId` is the token's subject, which the client ids it writes under are bound to. */
  readonly identity: { readonly userId: string; readonly name: string | null }
  /**
   * Who what the server holds for this member is counted under, across its reconnects: the
   * token's subject, or the address of a client without one.
   */
  readonly heldBy: string
  /**
   * Who its pace is kept for (`BuildPace`, `RetryLater`): the token's subject, across its
   * connections; a connection without one alone (many users may share an address: a NAT, the
   * load balancer), so no one is slowed for another's writes.
   */
  readonly pacedAs: string
  /** The awareness client ids this member spoke for: removed everywhere when it leaves. */
  readonly awarenessClientIds: ReadonlySet<number>
  readonly canWrite: boolean
  /** Whether a write of this member was ever refused (it is read-only). */
  readonly writeDenied: boolean
  /** The protocol extensions the client declared: broadcast events go only to those with `events`. */
  readonly capabilities: Capabilities
  send(frame: Uint8Array): void
  /**
   * Sends a sync answer, built by `answer` when it is sent; while the member's previous answer is
   * unsent, only its latest request is answered, once that one is sent.
   */
  answerSync(answer: () => Uint8Array | null): void
  close(code: number, reason: string): void
  /** False when the client asks for the room's state or presence faster than allowed. */
  takeRoomRequest(): boolean
  /** Records the awareness ids a frame speaks for; throws `ProtocolError` past the cap. */
  claimAwarenessClients(entries: AwarenessEntry[]): void
  /** Refuses a write from a read-only member, telling the client why once. */
  denyWrite(): void
  /** Sends `answer` to a sync-status request once `settled`. Throws `ProtocolError` past the cap. */
  answerSyncStatus(settled: Promise<void>, answer: Uint8Array): void
}

/** What a connection attaches to once the room has loaded. */
export interface MemberRoom {
  join(member: RoomMember): void
  leave(member: RoomMember): void
  /**
   * Handles one frame of `member`'s. Throws (or, for a big update applied across turns, returns a
   * promise that rejects with) a `SymphonyError` for what the client did wrong, and any other error
   * for a fault of the server's own.
   */
  receive(member: RoomMember, frame: Uint8Array): Promise<void> | undefined
}
