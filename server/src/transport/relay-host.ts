import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { CloseCode } from '@symphony/client/wire'
import { type RawData, type WebSocket, WebSocketServer } from 'ws'
import type { Transport } from '../core/connection.js'
import type { Logger } from '../logger.js'
import type { Capability } from '../protocol/capabilities.js'
import { decodeRelayMessage, type RelayedSession, relayPayloadLimit } from '../protocol/relay-frames.js'
import { hasInternalToken } from './internal-endpoint.js'
import { RelayLinkSender } from './relay-link-sender.js'
import { parseRequestTarget } from './request-target.js'
import type { ClientSession, RoomSessions } from './room-sessions.js'
import { WsTransport } from './ws-transport.js'

/** Where another server opens its relay link on this server's internal port. */
export const RELAY_PATH = '/internal/relay'

export interface RelayHostDeps {
  sessions: RoomSessions
  token: string
  /** The largest client frame, which a relay message carries whole. */
  maxMessageBytes: number
  logger: Logger
}

/**
 * The owner's side of the relay: each link (one WebSocket from another server, on the internal
 * port) carries the sessions of that server's clients of rooms owned here. Each session joins its
 * room here as a client of this server would (`RoomSessions`), its frames sent back over the link.
 */
export class RelayHost {
  readonly #server: WebSocketServer
  readonly #links = new Set<WebSocket>()
  #accepting = true

  constructor(private readonly deps: RelayHostDeps) {
    this.#server = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: relayPayloadLimit(deps.maxMessageBytes),
    })
  }

  /** The internal port's 'upgrade' listener: only the relay path, with the internal token. */
  readonly handleUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => {})
    if (parseRequestTarget(request.url).path !== RELAY_PATH || !hasInternalToken(request, this.deps.token)) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    this.#server.handleUpgrade(request, socket, head, (link) => this.#serve(link))
  }

  /** Draining: a session opened from now on is closed at once (1013), and its client routed again. */
  stopAccepting(): void {
    this.#accepting = false
  }

  /** Closes every link; their sessions leave their rooms. */
  close(): void {
    for (const link of this.#links) link.terminate()
  }

  #serve(link: WebSocket): void {
    this.#links.add(link)
    const sender = new RelayLinkSender(new WsTransport(link))
    const sessions = new Map<number, ClientSession>()
    const forget = (number: number) => {
      sessions.get(number)?.leave()
      sessions.delete(number)
    }
    link.on('error', (error) => this.deps.logger.warn({ err: error }, 'relay link failed'))
    link.on('close', () => {
      this.#links.delete(link)
      for (const session of sessions.values()) session.leave()
      sessions.clear()
    })
    link.on('message', (data: RawData) => {
      let message: ReturnType<typeof decodeRelayMessage>
      try {
        message = decodeRelayMessage(data as Buffer)
      } catch (error) {
        this.deps.logger.error({ err: error }, 'a relay message that could not be read; closing the link')
        link.close(CloseCode.ProtocolError, 'unreadable relay message')
        return
      }
      switch (message.kind) {
        case 'open': {
          forget(message.session) // a number reused: the earlier session is over
          if (!this.#accepting) {
            const reason = 'the server is shutting down; reconnect'
            sender.send({ kind: 'close', session: message.session, code: CloseCode.TryAgainLater, reason })
            break
          }
          const transport = new RelayTransport(sender, message.session, () => forget(message.session))
          const session = this.deps.sessions.open({ ...openingOf(message.opened), transport })
          if (session) sessions.set(message.session, session)
          break
        }
        case 'frame':
          sessions.get(message.session)?.receive(message.frame)
          break
        case 'leave':
          forget(message.session)
          break
        case 'close':
        case 'fanout':
          break // only the owner sends these
      }
    })
  }
}

function openingOf(opened: RelayedSession) {
  return {
    room: opened.room,
    id: opened.id,
    identity: opened.identity,
    heldBy: opened.heldBy,
    pacedAs: opened.pacedAs,
    capabilities: new Set(opened.capabilities as Capability[]),
    incarnation: opened.incarnation,
  }
}

/**
 * One relayed session's side of its link: what the connection sends goes over the link, tagged
 * with the session. Its unsent bytes are the link's: an edge that reads slowly makes every session
 * on it a slow consumer, closed as one would be here, so it never holds the owner's memory.
 */
class RelayTransport implements Transport {
  #closed = false

  constructor(
    private readonly link: RelayLinkSender,
    private readonly session: number,
    private readonly onClosed: () => void,
  ) {}

  get bufferedAmount(): number {
    return this.link.bufferedAmount
  }

  send(frame: Uint8Array, onSent?: () => void): void {
    if (!this.#closed) this.link.sendFrame(this.session, frame, onSent)
  }

  close(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.link.send({ kind: 'close', session: this.session, code, reason })
    queueMicrotask(this.onClosed) // as a socket's close event comes after its close: never re-entrant
  }
}
