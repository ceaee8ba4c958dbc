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
import { type Admission, admit } from '../core/admission.js'
import { Connection, type Identity } from '../core/connection.js'
import type { CoreMetrics } from '../core/core-metrics.js'
import type { EventStream } from '../core/event-stream.js'
import type { MemoryBudget } from '../core/memory-budget.js'
import { RetryLater, roomKey, writerKey } from '../core/pacing.js'
import type { RoomManager } from '../core/room-manager.js'
import type { ConnectionInfo } from '../core/server-events.js'
import { callWithin, DeadlineError } from '../deadline.js'
import { AUTH_FAILED, httpAnswer } from '../error-answers.js'
import type { Logger } from '../logger.js'
import { type Capabilities, capabilitiesFrom } from '../protocol/capabilities.js'
import { encodeSyncStatus } from '../protocol/codec.js'
import { refuseUpgrade } from './http-refusal.js'
import { parseRequestTarget } from './request-target.js'
import { SocketLiveness } from './socket-liveness.js'
import { WsTransport } from './ws-transport.js'

interface LiveSocket {
  socket: WebSocket
  transport: WsTransport
  connection: Connection
  admission: Admission
  liveness: SocketLiveness
}

/** An upgrade that passed every check before it. */
interface AcceptedUpgrade {
  room: string
  identity: Identity
  /** The protocol extensions the client declared on the URL (`?syncStatus=1`, `?broadcast=1`). */
  capabilities: Capabilities
  /** The incarnation the client's copy belongs to (`?incarnation=`), `none`, or null: not asked. */
  incarnation: number | 'none' | null
  /** The connection's id, given before the upgrade so `onConnect` sees it. */
  id: string
  /** Who what the server holds for it is counted under (`RoomMember.heldBy`). */
  heldBy: string
  /** Who its pace is kept for (`RoomMember.pacedAs`). */
  pacedAs: string
}

const SYNC_STATUS_ANNOUNCEMENT = encodeSyncStatus(new Uint8Array(0))

export interface GatewayDeps {
  authenticator: Authenticator
  manager: RoomManager
  /** Told of each connection joined, left or refused. */
  events: EventStream
  metrics: CoreMetrics
  /** The app's hook: it may refuse a connection before the upgrade (throwing). */
  onConnect?: ((connection: ConnectionInfo) => void | Promise<void>) | undefined
  /** What each connection's unsent bytes and waiting frames are charged to. */
  memory?: MemoryBudget
  logger: Logger
}

export interface GatewaySettings {
  limits: Limits
  /** Prefixes connection ids, so logs and metadata tell servers apart. */
  serverId: string
  /** Origins a browser may connect from; empty: any. Requests without an Origin are not browsers. */
  allowedOrigins?: readonly string[]
  /** The longest a connection waits for its room to load before it is closed with 1013 (`JOIN_WAIT_MS`). */
  joinWaitMs: number
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
  readonly #retryLater = new RetryLater()
  #onDrained: (() => void) | null = null

  private readonly limits: Limits
  readonly #joinWaitMs: number
  readonly #hookTimeoutMs: number
  /**
   * `<serverId>:<boot>:`, `boot` random per start: connection ids (and the webhook events and
   * metadata sessions named by them) never repeat when a server restarts under the same id.
   */
  readonly #idPrefix: string
  private readonly allowedOrigins: ReadonlySet<string>

  constructor(
    private readonly deps: GatewayDeps,
    { limits, serverId, allowedOrigins = [], joinWaitMs, hookTimeoutMs = 5_000 }: GatewaySettings,
  ) {
    this.limits = limits
    this.#joinWaitMs = joinWaitMs
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
    const refuse = <C extends ServerErrorCode>(
      status: ServerErrorStatus<C>,
      code: C,
      message: string,
      retryAfterSeconds?: number,
    ) => {
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
    const heldBy =
      identity.userId === ANONYMOUS_USER
        ? `address:${request.socket.remoteAddress}`
        : `user:${identity.userId}`
    const id = `${this.#idPrefix}${++this.#nextId}`
    const pacedAs = identity.userId === ANONYMOUS_USER ? id : heldBy
    const wait = Math.max(
      this.#retryLater.secondsLeft(roomKey(room)),
      this.#retryLater.secondsLeft(writerKey(pacedAs, room)),
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
      const { userId, name, info, access } = identity
      const timeoutMs = this.#hookTimeoutMs
      try {
        await callWithin(
          () => onConnect({ room, connectionId: id, userId, name, info, access }),
          timeoutMs,
          'the onConnect hook',
        )
      } catch (error) {
        if (error instanceof DeadlineError) {
          this.deps.logger.warn(
            { room, timeoutMs },
            'onConnect did not answer in time; the connection is refused as busy',
          )
          return refuse(
            503,
            'SERVER_BUSY',
            `the server's check of this connection took over ${timeoutMs} ms; retry later`,
          )
        }
        const answer = httpAnswer(error)
        if (answer.code === 'INTERNAL_ERROR')
          this.deps.logger.error({ err: error, room }, 'the onConnect hook failed')
        return refuse(answer.status, answer.code, answer.message)
      }
      if (socket.destroyed) return
    }
    // Shutdown may have begun while the token was being checked.
    if (!this.#accepting) return refuse(503, 'SHUTTING_DOWN', 'the server is shutting down')
    const capabilities = capabilitiesFrom(query)
    const incarnation = parseIncarnationParam(query.get(INCARNATION_PARAM))
    this.#server.handleUpgrade(request, socket, head, (ws) =>
      this.#accept(ws, { room, identity, capabilities, incarnation, id, heldBy, pacedAs }),
    )
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
    for (const { connection } of this.#live) connection.close(code, reason)
    return drained
  }

  /** A connection refused before it joined: counted in `/metrics` by `code`. */
  #refused(room: string | null, code: string): void {
    this.deps.events.emit({ type: 'connection.refused', room, code, at: Date.now() })
  }

  #accept(
    socket: WebSocket,
    { room, identity, capabilities, incarnation, id, heldBy, pacedAs }: AcceptedUpgrade,
  ): void {
    const { manager, metrics, events, logger } = this.deps
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
    if (manager.holders(room) >= this.limits.maxConnectionsPerRoom) {
      this.#refused(room, 'ROOM_FULL')
      transport.close(CloseCode.RoomFull, 'room at connection capacity')
      return
    }
    const connection = new Connection({
      id,
      roomName: room,
      incarnation,
      identity,
      heldBy,
      pacedAs,
      transport,
      limits: this.limits,
      metrics,
      logger,
      memory: this.deps.memory,
      capabilities,
      events,
      retryLater: this.#retryLater,
    })
    if (capabilities.has('sync-status')) connection.send(SYNC_STATUS_ANNOUNCEMENT)
    // Admitted before any frame can arrive, so frames sent while the room loads wait in order.
    const admission = admit(manager, connection, {
      joinWaitMs: this.#joinWaitMs,
      waits: metrics.joinWaits,
      retryLater: this.#retryLater,
    })
    const liveness = new SocketLiveness(transport.sendProgress)
    const live: LiveSocket = { socket, transport, connection, admission, liveness }
    this.#live.add(live)
    // Right after admission: whatever throws below, the close still releases the room.
    socket.on('close', () => this.#forget(live))
    events.emit({ type: 'connection.joined', ...connectionInfo(connection), at: Date.now() })
    socket.on('pong', () => liveness.pong())
    socket.on('message', (data: Buffer, isBinary) => {
      liveness.heard()
      if (isBinary) connection.receive(data)
      else connection.close(CloseCode.UnsupportedData, 'text frames are not part of the protocol')
    })
  }

  #forget(live: LiveSocket): void {
    this.#live.delete(live)
    live.admission.leave()
    this.deps.events.emit({ type: 'connection.left', ...connectionInfo(live.connection), at: Date.now() })
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
        live.connection.close(
          CloseCode.Unresponsive,
          'no answer to a ping, and nothing read, for a ping interval',
        )
    }
  }
}

function connectionInfo({ roomName, id, identity }: Connection): ConnectionInfo {
  const { userId, name, info, access } = identity
  return { room: roomName, connectionId: id, userId, name, info, access }
}
