import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import {
  CloseCode,
  INCARNATION_PARAM,
  isValidRoomName,
  parseIncarnationParam,
  ROOM_NAME_RULE,
  roomFromPath,
  type ServerErrorCode,
  type ServerErrorStatus,
} from '@symphony/client/wire'
import { type WebSocket, WebSocketServer } from 'ws'
import { ANONYMOUS_USER, type Authenticator } from '../auth/authenticator.js'
import { selectProtocol, upgradeToken } from '../auth/request-token.js'
import type { Limits } from '../config.js'
import type { Identity } from '../core/connection.js'
import type { CoreMetrics } from '../core/core-metrics.js'
import type { EventStream } from '../core/event-stream.js'
import { type RetryLater, roomKey, userKey } from '../core/pacing.js'
import type { ConnectionInfo } from '../core/server-events.js'
import { callWithin, DeadlineError } from '../deadline.js'
import { AUTH_FAILED, httpAnswer } from '../error-answers.js'
import type { Logger } from '../logger.js'
import type { RoomOwner } from '../ports/room-registry.js'
import { capabilitiesFrom } from '../protocol/capabilities.js'
import { refuseUpgrade } from './http-refusal.js'
import type { RelayLinks } from './relay-links.js'
import { parseRequestTarget } from './request-target.js'
import type { ClientSession, RoomSessions, SessionOpening } from './room-sessions.js'
import { SocketLiveness } from './socket-liveness.js'
import { WsTransport } from './ws-transport.js'

/** Refuses an upgrade with `status` and the error `code` (and a `Retry-After`). */
type Refuse = <C extends ServerErrorCode>(
  status: ServerErrorStatus<C>,
  code: C,
  message: string,
  retryAfterSeconds?: number,
) => void

interface LiveSocket {
  socket: WebSocket
  transport: WsTransport
  session: ClientSession
  liveness: SocketLiveness
}

/** An upgrade that passed every check before it (its id given before the upgrade, so `onConnect` sees it). */
interface AcceptedUpgrade extends Omit<SessionOpening, 'transport'> {
  /** The room's owner when another server owns it: the client is relayed there. */
  owner: RoomOwner | null
}

/** Where a client of a room another server owns is relayed. */
export interface Relay {
  links: RelayLinks
  /** The room's owner if another server owns it (null: this one serves it). */
  ownerElsewhere(room: string): Promise<RoomOwner | null>
}

export interface GatewayDeps {
  authenticator: Authenticator
  /** Where a client joins a room this server serves. */
  sessions: RoomSessions
  /** Unset: every room is served here. */
  relay?: Relay
  /** Told of each connection refused. */
  events: EventStream
  metrics: CoreMetrics
  /** The app's hook: it may refuse a connection before the upgrade (throwing). */
  onConnect?: ((connection: ConnectionInfo) => void | Promise<void>) | undefined
  /** Refuses joiners for a while after the server turned them away as busy. */
  retryLater: RetryLater
  logger: Logger
}

export interface GatewaySettings {
  limits: Limits
  /** Prefixes connection ids, so logs and metadata tell servers apart. */
  serverId: string
  /** Origins a browser may connect from; empty: any. Requests without an Origin are not browsers. */
  allowedOrigins?: readonly string[]
  /** The longest `onConnect` may take; past it the connection is refused as busy (`HOOK_TIMEOUT_MS`). */
  hookTimeoutMs?: number
}

/**
 * Turns HTTP upgrades into connections: room name and token (from the `symphony-token.`
 * subprotocol or `?token=`, see `request-token.ts`) are checked before the upgrade,
 * connection limits right after it, and dead sockets are reaped by ping/pong.
 */
export class WebSocketGateway {
  readonly #server: WebSocketServer
  readonly #live = new Set<LiveSocket>()
  readonly #pingTimer: NodeJS.Timeout
  #accepting = true
  #nextId = 0
  #onDrained: (() => void) | null = null

  private readonly limits: Limits
  readonly #hookTimeoutMs: number
  /**
   * `<serverId>:<boot>:`, `boot` random per start: connection ids (and the webhook events and
   * metadata sessions named by them) never repeat when a server restarts under the same id.
   */
  readonly #idPrefix: string
  private readonly allowedOrigins: ReadonlySet<string>

  constructor(
    private readonly deps: GatewayDeps,
    { limits, serverId, allowedOrigins = [], hookTimeoutMs = 5_000 }: GatewaySettings,
  ) {
    this.limits = limits
    this.#hookTimeoutMs = hookTimeoutMs
    this.#idPrefix = `${serverId}:${randomBytes(4).toString('hex')}:`
    this.allowedOrigins = new Set(allowedOrigins)
    this.#server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: limits.maxMessageBytes,
      // `symphony` when offered (@symphony/client), else none (plain providers offer none).
      handleProtocols: selectProtocol,
    })
    this.#pingTimer = setInterval(() => this.#pingAll(), limits.pingIntervalMs)
    this.#pingTimer.unref()
  }

  get connectionCount(): number {
    return this.#live.size
  }

  /** The HTTP server's 'upgrade' listener; never throws, whatever the request. */
  readonly handleUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => {}) // a client vanishing mid-handshake is not our error
    this.#upgrade(request, socket, head).catch((error: unknown) => {
      this.deps.logger.error({ err: error }, 'upgrade failed')
      socket.destroy()
    })
  }

  async #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    let refusedRoom: string | null = null
    const refuse: Refuse = (status, code, message, retryAfterSeconds) => {
      this.#refused(refusedRoom, code)
      refuseUpgrade(socket, status, code, message, retryAfterSeconds)
    }
    if (!this.#accepting) return refuse(503, 'SHUTTING_DOWN', 'the server is shutting down')
    const origin = request.headers.origin
    if (origin !== undefined && this.allowedOrigins.size > 0 && !this.allowedOrigins.has(origin)) {
      return refuse(403, 'ORIGIN_NOT_ALLOWED', `origin ${origin.slice(0, 200)} is not allowed`)
    }
    const { path, query } = parseRequestTarget(request.url)
    const room = roomFromPath(path.slice(1))
    if (!isValidRoomName(room)) {
      return refuse(400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
    }
    refusedRoom = room
    let identity: Identity
    try {
      identity = await this.deps.authenticator.authenticate(upgradeToken(request.headers, query), room)
    } catch (error) {
      const answer = httpAnswer(error, AUTH_FAILED)
      if (answer.code === AUTH_FAILED.code) {
        this.deps.logger.error({ err: error, room }, 'authentication failed unexpectedly')
      }
      return refuse(answer.status, answer.code, answer.message, answer.retryAfterSeconds)
    }
    if (socket.destroyed) return
    // A token's subject is one user however it connects; without one (no auth, or a token
    // naming no subject), the address stands for the user.
    const anonymous = identity.userId === ANONYMOUS_USER
    const heldBy = anonymous ? `address:${request.socket.remoteAddress}` : `user:${identity.userId}`
    const id = `${this.#idPrefix}${++this.#nextId}`
    // Each anonymous connection is paced on its own: an address may be a whole office behind NAT.
    const pacedAs = anonymous ? id : heldBy
    const wait = Math.max(
      this.deps.retryLater.secondsLeft(roomKey(room)),
      this.deps.retryLater.secondsLeft(userKey(pacedAs, room)),
    )
    if (wait > 0) {
      return refuse(
        503,
        'SERVER_BUSY',
        `the server was too busy for this just now (1013); retry in ${wait} s`,
        wait,
      )
    }
    const { onConnect } = this.deps
    if (onConnect) {
      if (!(await this.#letInByApp(onConnect, { room, connectionId: id, identity }, refuse))) return
      if (socket.destroyed) return
    }
    const owner = (await this.deps.relay?.ownerElsewhere(room)) ?? null
    // Shutdown may have begun while the token was being checked.
    if (!this.#accepting) return refuse(503, 'SHUTTING_DOWN', 'the server is shutting down')
    if (socket.destroyed) return
    const capabilities = capabilitiesFrom(query)
    const incarnation = parseIncarnationParam(query.get(INCARNATION_PARAM))
    this.#server.handleUpgrade(request, socket, head, (ws) =>
      this.#accept(ws, { room, identity, capabilities, incarnation, id, heldBy, pacedAs, owner }),
    )
  }

  /** Asks the app's `onConnect` (within `HOOK_TIMEOUT_MS`); false once it refused the connection (`refuse` called). */
  async #letInByApp(
    onConnect: NonNullable<GatewayDeps['onConnect']>,
    { room, connectionId, identity }: { room: string; connectionId: string; identity: Identity },
    refuse: Refuse,
  ): Promise<boolean> {
    const { userId, name, info, access } = identity
    const timeoutMs = this.#hookTimeoutMs
    try {
      await callWithin(
        () => onConnect({ room, connectionId, userId, name, info, access }),
        timeoutMs,
        'the onConnect hook',
      )
      return true
    } catch (error) {
      if (error instanceof DeadlineError) {
        this.deps.logger.warn(
          { room, timeoutMs },
          'onConnect did not answer in time; the connection is refused as busy',
        )
        refuse(
          503,
          'SERVER_BUSY',
          `the server's check of this connection took over ${timeoutMs} ms; retry later`,
        )
        return false
      }
      const answer = httpAnswer(error)
      if (answer.code === 'INTERNAL_ERROR')
        this.deps.logger.error({ err: error, room }, 'the onConnect hook failed')
      refuse(answer.status, answer.code, answer.message)
      return false
    }
  }

  /** New upgrades are refused with 503 from now on. */
  stopAccepting(): void {
    this.#accepting = false
  }

  /** Closes every connection with `code`; resolves once all sockets are gone. */
  closeAll(code: number, reason: string): Promise<void> {
    clearInterval(this.#pingTimer)
    if (this.#live.size === 0) return Promise.resolve()
    const drained = new Promise<void>((resolve) => {
      this.#onDrained = resolve
    })
    for (const { session } of this.#live) session.close(code, reason)
    return drained
  }

  /** A connection refused before it joined: counted in `/metrics` by `code`. */
  #refused(room: string | null, code: string): void {
    this.deps.sessions.refused(room, code)
  }

  #accept(socket: WebSocket, accepted: AcceptedUpgrade): void {
    const { room } = accepted
    const { metrics, logger } = this.deps
    socket.on('error', (error: Error & { code?: string }) => {
      // ws has already closed the socket (1009 for an oversized message, 1002 for a bad frame).
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
        metrics.connectionsClosed.labels('MessageTooBig').inc()
      logger.debug({ err: error, room }, 'socket error')
    })
    const transport = new WsTransport(socket)
    if (!this.#accepting) {
      transport.close(CloseCode.GoingAway, 'server shutting down')
      return
    }
    if (this.#live.size >= this.limits.maxConnections) {
      this.#refused(room, 'SERVER_FULL')
      transport.close(CloseCode.TryAgainLater, 'server at connection capacity')
      return
    }
    const liveness = new SocketLiveness(transport.sendProgress)
    const live: LiveSocket = { socket, transport, session: NO_SESSION, liveness }
    const session = this.#open(accepted, transport, (waiting) => this.#move(live, accepted, waiting))
    if (!session) return
    live.session = session
    this.#live.add(live)
    // Right after the session opened: whatever throws below, the close still ends it.
    socket.on('close', () => this.#forget(live))
    socket.on('pong', () => liveness.pong())
    socket.on('message', (data: Buffer, isBinary) => {
      liveness.heard()
      if (isBinary) live.session.receive(data)
      else live.session.close(CloseCode.UnsupportedData, 'text frames are not part of the protocol')
    })
  }

  /**
   * Joins the room here, or relays the client to the room's owner. `onMoved`: the room turned out
   * to be another server's while the client waited for it here (see `#move`).
   */
  #open(
    accepted: AcceptedUpgrade,
    transport: WsTransport,
    onMoved?: (waiting: Uint8Array[]) => void,
  ): ClientSession | null {
    const { owner, capabilities, ...opening } = accepted
    const { relay, sessions } = this.deps
    if (!owner || !relay)
      return sessions.open({ ...opening, capabilities, transport, ...(relay && onMoved ? { onMoved } : {}) })
    const { room, id, identity, heldBy, pacedAs, incarnation } = opening
    const { userId, name, info, access, expiresAt } = identity
    return relay.links.open(
      owner.internalAddress,
      {
        room,
        id,
        identity: { userId, name, info, access, expiresAt },
        heldBy,
        pacedAs,
        capabilities: [...capabilities],
        incarnation,
      },
      transport,
    )
  }

  /**
   * The client waited for its room here, and the room's load found another server owning it (it
   * claimed the room in between, as when the registry answered this server's lookup too late): the
   * client is relayed to that owner over the socket it has, with what it sent meanwhile, instead of
   * being closed and reconnecting. Once only: an owner that moves again closes it (1013).
   */
  #move(live: LiveSocket, accepted: AcceptedUpgrade, waiting: Uint8Array[]): void {
    const relay = this.deps.relay
    const pending = new PendingSession(live.transport, waiting, this.limits.maxBufferedBytes)
    live.session = pending
    void (relay?.ownerElsewhere(accepted.room) ?? Promise.resolve(null))
      .catch(() => null)
      .then((owner) => {
        if (pending.ended) return
        if (!owner) {
          live.transport.close(CloseCode.TryAgainLater, 'the room could not be loaded; retry')
          return
        }
        const session = this.#open({ ...accepted, owner }, live.transport)
        if (!session) return
        live.session = session
        for (const frame of pending.frames) session.receive(frame)
      })
  }

  #forget(live: LiveSocket): void {
    this.#live.delete(live)
    live.session.leave()
    if (this.#live.size === 0) this.#onDrained?.()
  }

  /** Pings the sockets that answered, waits for those still downloading, closes the dead (`SocketLiveness`). */
  #pingAll(): void {
    const now = performance.now()
    for (const live of this.#live) {
      const verdict = live.liveness.sweep(live.transport.sendProgress, now)
      if (verdict === 'ping') live.socket.ping()
      // Counted; a peer that reads nothing never gets the close frame, and its socket is destroyed
      // once the close handshake's wait runs out.
      else if (verdict === 'dead')
        live.session.close(
          CloseCode.Unresponsive,
          'no answer to a ping, and nothing read, for a ping interval',
        )
    }
  }
}

/** The session of a socket not opened yet (it is never read before it is). */
const NO_SESSION: ClientSession = { receive() {}, close() {}, leave() {} }

/** A client between two sessions: what it sends waits, bounded as it would wait for its room. */
class PendingSession implements ClientSession {
  #bytes: number
  #ended = false

  constructor(
    private readonly transport: WsTransport,
    readonly frames: Uint8Array[],
    private readonly maxBytes: number,
  ) {
    this.#bytes = frames.reduce((sum, frame) => sum + frame.length, 0)
  }

  get ended(): boolean {
    return this.#ended
  }

  receive(frame: Uint8Array): void {
    if (this.#ended) return
    this.#bytes += frame.length
    if (this.#bytes > this.maxBytes) {
      this.close(CloseCode.TryAgainLater, 'too much sent before the room could take it')
      return
    }
    this.frames.push(frame)
  }

  close(code: number, reason: string): void {
    if (this.#ended) return
    this.#ended = true
    this.transport.close(code, reason)
  }

  leave(): void {
    this.#ended = true
  }
}
