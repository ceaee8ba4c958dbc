import { CloseCode, closeCodeName } from '@symphony/client/wire'
import { closeAnswer } from '../error-answers.js'
import { ProtocolError, ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import { type Capabilities, NO_CAPABILITIES } from '../protocol/capabilities.js'
import { type AwarenessEntry, encodePermissionDenied } from '../protocol/codec.js'
import type { CoreMetrics } from './core-metrics.js'
import type { EventStream } from './event-stream.js'
import type { MemoryBudget, MemoryHolder } from './memory-budget.js'
import { type RetryLater, userKey } from './pacing.js'
import type { MemberRoom, RoomMember } from './room-member.js'
import { TokenBucket } from './token-bucket.js'

/** The socket under a connection; the core never sees `ws` itself. */
export interface Transport {
  /**
   * Queues `frame`. `onSent` runs once it has left the process (the kernel took it) or the socket
   * failed; never if the frame was not queued (the socket is closing).
   */
  send(frame: Uint8Array, onSent?: () => void): void
  close(code: number, reason: string): void
  /** Bytes queued for sending that the peer has not taken yet. */
  readonly bufferedAmount: number
}

export type Access = 'rw' | 'ro'

export interface Identity {
  userId: string
  /** The token's `name` claim: how operators see the user. */
  name: string | null
  /** The token's `info` claim, a JSON object (bounded by `MAX_INFO_BYTES`). */
  info: Record<string, unknown> | null
  access: Access
  /** When the token stops being valid (epoch ms); the connection is closed then. Null: never. */
  expiresAt: number | null
}

export interface ConnectionLimits {
  messagesPerSecond: number
  messageBurst: number
  /** A connection whose unsent backlog passes this is closed as a slow consumer. */
  maxBufferedBytes: number
}

/** What a connection is built from: who it is, its socket, its limits, and what it reports to. */
export interface ConnectionInit {
  /** Unique across servers and restarts (`<serverId>:<boot>:<n>`): how logs and metadata name it. */
  id: string
  roomName: string
  /** The incarnation the client's copy belongs to (`?incarnation=`), `none`, or null: not asked. */
  incarnation?: number | 'none' | null
  identity: Identity
  /** Who what the server holds for it is counted under (`RoomMember.heldBy`); default: the token's subject. */
  heldBy?: string
  /** Who its pace is kept for (`RoomMember.pacedAs`); default: `heldBy`. */
  pacedAs?: string
  transport: Transport
  limits: ConnectionLimits
  metrics: ConnectionMetrics
  logger: Logger
  /** What the connection's unsent bytes and waiting frames are charged to; it may shed the connection. */
  memory?: MemoryBudget
  /** The protocol extensions the client declared (none by default). */
  capabilities?: Capabilities
  /** Told of each write refused (`update.refused`). */
  events?: Pick<EventStream, 'emit'>
  /** Told when the connection is closed as busy (`ServerBusyError`): its writer waits before coming back. */
  retryLater?: Pick<RetryLater, 'refused'>
}

/** What a connection counts: its frames and bytes (hot path), refused writes, server-side closes. */
export type ConnectionMetrics = Pick<
  CoreMetrics,
  'messagesReceived' | 'bytesReceived' | 'messagesSent' | 'bytesSent' | 'connectionsClosed'
>

export const READ_ONLY_REASON = 'read-only access: document updates are ignored'

/**
 * Awareness client ids one connection may speak for. A y-websocket client has one (its doc's
 * clientID); the cap stops a client from filling the room's presence table with invented ids.
 */
export const MAX_AWARENESS_CLIENTS_PER_CONNECTION = 8
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Sync-status requests of one connection waiting for the journal at once. Our client keeps one in
 * flight; the cap stops a client from piling up answers while the journal is slow.
 */
export const MAX_PENDING_SYNC_STATUS = 16

/**
 * Requests a client may send that the server answers with the room's whole state (sync step 1:
 * a diff encode) or presence (query-awareness): each costs O(room), not O(message).
 */
const ROOM_REQUESTS_PER_SECOND = 2
const ROOM_REQUEST_BURST = 10

/**
 * One client in one room. Frames that arrive before the room has loaded wait here, so no client
 * ever syncs against a half-loaded room; so do frames that arrive while the room is still applying
 * this client's previous big update, a slice per turn, so each client's frames apply in order.
 */
export class Connection implements RoomMember, MemoryHolder {
  readonly id: string
  readonly roomName: string
  readonly incarnation: number | 'none' | null
  readonly identity: Identity
  readonly heldBy: string
  readonly pacedAs: string
  readonly awarenessClientIds = new Set<number>()
  /** The protocol extensions the client declared: plain providers declare none. */
  readonly capabilities: Capabilities
  readonly #rate: TokenBucket
  readonly #roomRequests = new TokenBucket(ROOM_REQUESTS_PER_SECOND, ROOM_REQUEST_BURST)
  #room: MemberRoom | null = null
  #waiting: Uint8Array[] = []
  #waitingBytes = 0
  /** The room is applying a frame of ours across event-loop turns. */
  #busy = false
  #closed = false
  /** The socket is gone: nothing of it is charged any more. */
  #detached = false
  #writeDenied = false
  #pendingSyncStatus = 0
  #expiryTimer: NodeJS.Timeout | null = null
  /** The transport's unsent bytes as last charged to the budget. */
  #unsent = 0
  /** Presence bytes of the awareness clients this connection speaks for (the room's table charges them). */
  readonly #presenceBytes = new Map<number, number>()
  /** The sync answer queued and not sent yet: later requests wait for it (see `answerSync`). */
  #answer: Uint8Array | null = null
  #nextAnswer: (() => Uint8Array | null) | null = null
  readonly #memory: MemoryBudget | null
  readonly #transport: Transport
  readonly #limits: ConnectionLimits
  readonly #metrics: ConnectionMetrics
  readonly #logger: Logger
  readonly #events: ConnectionInit['events']
  readonly #retryLater: Pick<RetryLater, 'refused'> | null

  constructor({
    id,
    roomName,
    incarnation,
    identity,
    heldBy,
    pacedAs,
    transport,
    limits,
    metrics,
    logger,
    memory,
    capabilities,
    events,
    retryLater,
  }: ConnectionInit) {
    this.#events = events
    this.#retryLater = retryLater ?? null
    this.id = id
    this.capabilities = capabilities ?? NO_CAPABILITIES
    this.roomName = roomName
    this.incarnation = incarnation ?? null
    this.identity = identity
    this.heldBy = heldBy ?? `user:${identity.userId}`
    this.pacedAs = pacedAs ?? this.heldBy
    this.#transport = transport
    this.#limits = limits
    this.#metrics = metrics
    this.#logger = logger
    this.#rate = new TokenBucket(limits.messagesPerSecond, limits.messageBurst)
    this.#memory = memory ?? null
    this.#memory?.track(this)
    if (identity.expiresAt !== null) this.#closeAtExpiry(identity.expiresAt)
  }

  /**
   * What this connection makes the server hold: unsent bytes (its share of a sync answer other
   * connections hold too), frames waiting, presence.
   */
  get heldBytes(): number {
    let held = this.#unsent + this.#waitingBytes
    for (const bytes of this.#presenceBytes.values()) held += bytes
    if (this.#answer) held += this.#answer.length / Math.max(1, this.#memory?.holders(this.#answer) ?? 1)
    return held
  }

  /** The server is over its memory budget and this connection holds among the most. */
  shed(): void {
    // Its user waits at the door: back at once, it had the room send it the whole state again.
    this.#retryLater?.refused(userKey(this.pacedAs, this.roomName))
    this.close(CloseCode.MemoryBudgetExceeded, 'the server is short of memory; reconnect later')
  }

  get canWrite(): boolean {
    return this.identity.access === 'rw'
  }

  /** Whether a write of this connection was ever refused (it is read-only). */
  get writeDenied(): boolean {
    return this.#writeDenied
  }

  get closed(): boolean {
    return this.#closed
  }

  /** The room is loaded: join it and handle what arrived meanwhile, in order. */
  attach(room: MemberRoom): void {
    if (this.#closed) return
    this.#room = room
    try {
      room.join(this)
    } catch (error) {
      this.#fail(error) // a fault of ours: close (1011) and log it, never an unhandled rejection
      return
    }
    this.#handleWaiting()
  }

  /**
   * The room is served by another server: this connection ends without closing its socket, and
   * hands over the frames that waited for the room, in order, for the socket's next session.
   */
  handOver(): Uint8Array[] {
    const waiting = this.#waiting
    this.detach()
    return waiting
  }

  /** The socket closed: leave the room. */
  detach(): void {
    this.#closed = true
    this.#detached = true
    this.#clearExpiry()
    this.#room?.leave(this)
    this.#room = null
    this.#waiting = []
    this.#nextAnswer = null
    // The socket is gone, and with it what it held.
    this.#releaseAnswer()
    this.#memory?.charge('waiting', -this.#waitingBytes)
    this.#memory?.charge('unsent', -this.#unsent)
    this.#waitingBytes = 0
    this.#unsent = 0
    this.#memory?.forget(this)
  }

  receive(frame: Uint8Array): void {
    if (this.#closed) return
    this.#metrics.messagesReceived.inc()
    this.#metrics.bytesReceived.inc(frame.length)
    if (!this.#rate.take()) {
      this.close(CloseCode.RateLimited, 'message rate limit exceeded')
      return
    }
    if (this.#room && !this.#busy) {
      this.#handle(frame)
      return
    }
    // Held until the room loads (or is done with our last frame): bounded in count by the rate
    // limit, and in bytes here.
    if (this.#waitingBytes + frame.length > this.#limits.maxBufferedBytes) {
      this.close(CloseCode.TryAgainLater, 'too much sent before the room could take it')
      return
    }
    this.#waitingBytes += frame.length
    this.#memory?.charge('waiting', frame.length)
    this.#waiting.push(frame)
  }

  /** False when the client asks for the room's state or presence faster than allowed. */
  takeRoomRequest(): boolean {
    return this.#roomRequests.take()
  }

  /** Records the awareness ids a frame speaks for; throws past the per-connection cap. */
  claimAwarenessClients(entries: AwarenessEntry[]): void {
    for (const { clientId: id } of entries) {
      if (this.awarenessClientIds.has(id)) continue
      if (this.awarenessClientIds.size >= MAX_AWARENESS_CLIENTS_PER_CONNECTION) {
        throw new ProtocolError(
          `a connection may speak for at most ${MAX_AWARENESS_CLIENTS_PER_CONNECTION} awareness clients`,
        )
      }
      this.awarenessClientIds.add(id)
    }
    for (const { clientId, state } of entries) this.#presenceBytes.set(clientId, state?.length ?? 0)
  }

  send(frame: Uint8Array, onSent: () => void = this.#recountUnsent): void {
    if (this.#closed) return
    if (this.#transport.bufferedAmount > this.#limits.maxBufferedBytes) {
      this.close(CloseCode.SlowConsumer, 'too slow to receive updates')
      return
    }
    try {
      this.#transport.send(frame, onSent)
    } catch (error) {
      // A socket that throws is broken on our side: this connection ends, the room goes on.
      this.#fail(error)
      return
    }
    this.#recountUnsent()
    this.#metrics.messagesSent.inc()
    this.#metrics.bytesSent.inc(frame.length)
  }

  /**
   * Sends the room's answer to a sync request. While the previous answer is still unsent, the
   * request waits instead, and only the latest waiting one is answered once that is sent: a client
   * that does not read holds one answer, however often it asks. `answer` runs when the answer is
   * sent, so it holds the room as it is then; null: nothing to send (the room is gone).
   */
  answerSync(answer: () => Uint8Array | null): void {
    if (this.#answer) {
      this.#nextAnswer = answer
      return
    }
    const frame = answer()
    if (!frame || this.#closed) return
    this.#answer = frame
    this.#memory?.hold(frame)
    this.send(frame, this.#answerSent)
  }

  #releaseAnswer(): void {
    if (this.#answer) this.#memory?.release(this.#answer)
    this.#answer = null
  }

  readonly #answerSent = (): void => {
    this.#releaseAnswer()
    this.#recountUnsent()
    const next = this.#nextAnswer
    this.#nextAnswer = null
    if (!next || this.#closed) return
    try {
      this.answerSync(next)
    } catch (error) {
      this.#fail(error)
    }
  }

  /**
   * Charges the budget with what the socket holds unsent now (O(1): on every send and write done),
   * less the sync answer in flight, which is charged once for every socket holding it.
   */
  readonly #recountUnsent = (): void => {
    if (!this.#memory || this.#detached) return
    const unsent = Math.max(0, this.#transport.bufferedAmount - (this.#answer?.length ?? 0))
    if (unsent === this.#unsent) return
    this.#memory.charge('unsent', unsent - this.#unsent)
    this.#unsent = unsent
  }

  /** Sends `answer` to a sync-status request once `settled`. Throws `ProtocolError` past the cap. */
  answerSyncStatus(settled: Promise<void>, answer: Uint8Array): void {
    if (this.#pendingSyncStatus >= MAX_PENDING_SYNC_STATUS) {
      throw new ProtocolError(`more than ${MAX_PENDING_SYNC_STATUS} sync-status requests awaiting an answer`)
    }
    this.#pendingSyncStatus++
    void settled.then(() => {
      this.#pendingSyncStatus--
      this.send(answer)
    })
  }

  /** Refuses a write from a read-only connection, telling the client why once. */
  denyWrite(): void {
    const { userId, name } = this.identity
    const origin = { kind: 'client', connectionId: this.id, userId, name } as const
    this.#events?.emit({
      type: 'update.refused',
      room: this.roomName,
      origin,
      code: 'READ_ONLY',
      at: Date.now(),
    })
    if (this.#writeDenied) return
    this.#writeDenied = true
    this.send(encodePermissionDenied(READ_ONLY_REASON))
  }

  close(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.#clearExpiry()
    this.#metrics.connectionsClosed.labels(closeCodeName(code)).inc()
    try {
      this.#transport.close(code, reason)
    } catch (error) {
      this.#logger.error(
        { err: error, room: this.roomName, connection: this.id },
        'closing the socket failed',
      )
    }
  }

  /** A token is valid until its `exp`, not for as long as its connection lasts. */
  #closeAtExpiry(expiresAt: number): void {
    const delay = expiresAt - Date.now()
    if (delay <= 0) {
      this.close(CloseCode.TokenExpired, 'the token has expired; reconnect with a fresh one')
      return
    }
    // Timers fire at once past 2^31 - 1 ms (about 24.8 days): look again then instead.
    this.#expiryTimer = setTimeout(() => this.#closeAtExpiry(expiresAt), Math.min(delay, MAX_TIMER_MS))
    this.#expiryTimer.unref()
  }

  #clearExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer)
    this.#expiryTimer = null
  }

  #handle(frame: Uint8Array): void {
    if (this.#closed || !this.#room) return
    let applying: Promise<void> | undefined
    try {
      applying = this.#room.receive(this, frame)
    } catch (error) {
      this.#fail(error)
      return
    }
    if (!applying) return
    this.#busy = true
    applying.then(
      () => {
        this.#busy = false
        this.#handleWaiting()
      },
      (error: unknown) => {
        this.#busy = false
        this.#fail(error)
      },
    )
  }

  /** Handles the frames held while the room loaded or was busy, in order, until it is busy again. */
  #handleWaiting(): void {
    let next = 0
    while (next < this.#waiting.length && !this.#busy && !this.#closed) {
      const frame = this.#waiting[next++] as Uint8Array
      this.#waitingBytes -= frame.length
      this.#memory?.charge('waiting', -frame.length)
      this.#handle(frame)
    }
    this.#waiting = this.#closed ? [] : this.#waiting.slice(next)
  }

  #fail(error: unknown): void {
    const { code, reason } = closeAnswer(error)
    if (error instanceof ServerBusyError) this.#retryLater?.refused(userKey(this.pacedAs, this.roomName))
    if (code === CloseCode.InternalError) {
      this.#logger.error(
        { err: error, room: this.roomName, connection: this.id },
        'server error while serving a connection; closing it',
      )
    }
    this.close(code, reason)
  }
}
