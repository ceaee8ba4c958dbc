import type { Socket } from 'node:net'
import { CloseCode, internalAuthorization } from '@symphony/client/wire'
import { type RawData, WebSocket } from 'ws'
import type { Transport } from '../core/connection.js'
import type { CoreMetrics } from '../core/core-metrics.js'
import { type Corkable, corkUntilTurnEnds } from '../cork-until-turn-ends.js'
import type { Logger } from '../logger.js'
import {
  decodeRelayMessage,
  encodeRelayMessage,
  type RelayedSession,
  type RelayMessage,
  relayPayloadLimit,
} from '../protocol/relay-frames.js'
import { RELAY_PATH } from './relay-host.js'
import type { ClientSession } from './room-sessions.js'

/** How long an owner that could not be reached counts as gone (its rooms are taken over at once). */
const UNREACHABLE_MS = 10_000
/**
 * A link from whose owner nothing came for this long (no message, no answer to a ping) is
 * dropped, and its clients reconnect: an owner stalled (or cut off) keeps its TCP connection open
 * and sends nothing.
 */
const LINK_PING_MS = 5_000

export interface RelayLinksOptions {
  token: string
  /** The largest client frame, which a relay message carries whole. */
  maxMessageBytes: number
  /** A client whose unsent bytes pass this is closed as a slow consumer, as the owner would. */
  maxBufferedBytes: number
  /** Counts the clients closed here (slow consumers), as the owner counts its own. */
  metrics: Pick<CoreMetrics, 'connectionsClosed'>
  logger: Logger
}

/**
 * The edge's side of the relay: one link per owner server (a WebSocket to its internal port),
 * shared by every client here of a room that server owns. A client's frames go to the owner as
 * they come, the owner's frames to the client's socket; when a link fails, its clients are closed
 * with 1013 and reconnect, which routes them again (to a new owner once there is one).
 */
export class RelayLinks {
  readonly #links = new Map<string, RelayLink>()
  /** Owners whose link could not be opened (nothing listens there), and when. */
  readonly #unreachable = new Map<string, number>()

  constructor(private readonly options: RelayLinksOptions) {}

  /** Relays a client of a room `address` owns; its socket's side is `client`. */
  open(address: string, opened: RelayedSession, client: Transport): ClientSession {
    let link = this.#links.get(address)
    if (!link) {
      link = new RelayLink(address, this.options, (refused) => {
        if (this.#links.get(address) === link) this.#links.delete(address)
        if (refused) this.#unreachable.set(address, Date.now())
      })
      this.#links.set(address, link)
    }
    return link.attach(opened, client)
  }

  /** Rooms with a client relayed now. */
  get relayedRooms(): number {
    const rooms = new Set<string>()
    for (const link of this.#links.values()) for (const room of link.rooms()) rooms.add(room)
    return rooms.size
  }

  /** Clients relayed now. */
  get relayedConnections(): number {
    let sessions = 0
    for (const link of this.#links.values()) sessions += link.sessionCount
    return sessions
  }

  /** Whether nothing listened at `address` lately: the owner there is gone, its process exited. */
  unreachable(address: string): boolean {
    const at = this.#unreachable.get(address)
    if (at === undefined) return false
    if (Date.now() - at < UNREACHABLE_MS) return true
    this.#unreachable.delete(address)
    return false
  }

  close(): void {
    for (const link of this.#links.values()) link.close()
  }
}

/** One link to one owner, and the sessions it carries. */
class RelayLink {
  readonly #socket: WebSocket
  /** Each session's client socket, and its room. */
  readonly #sessions = new Map<number, { client: Transport; room: string }>()
  /** What was sent before the link opened, in order. */
  #queued: Buffer[] | null = []
  #nextSession = 0
  /** The link's TCP socket, held corked from a turn's first message to the turn's end: one write. */
  readonly #corked: Corkable = {
    cork: () => this.#tcp?.cork(),
    uncork: () => this.#tcp?.uncork(),
  }

  constructor(
    address: string,
    private readonly options: RelayLinksOptions,
    /** Told once the link is closed; `refused`: nothing listened at the address (its process is gone). */
    onGone: (refused: boolean) => void,
  ) {
    this.#socket = new WebSocket(`ws://${address}${RELAY_PATH}`, {
      headers: { authorization: internalAuthorization(options.token) },
      perMessageDeflate: false,
      maxPayload: relayPayloadLimit(options.maxMessageBytes),
    })
    let refused = false
    let answered = true
    const pinger = setInterval(() => {
      if (!answered) return this.#socket.terminate()
      answered = false
      if (this.#socket.readyState === WebSocket.OPEN) this.#socket.ping()
    }, LINK_PING_MS)
    pinger.unref()
    // Anything from the owner shows it alive: its pong may wait behind megabytes it is sending.
    this.#socket.on('pong', () => {
      answered = true
    })
    this.#socket.on('open', () => {
      for (const message of this.#queued ?? []) this.#socket.send(message)
      this.#queued = null
    })
    this.#socket.on('message', (data: RawData) => {
      answered = true
      this.#received(data as Buffer)
    })
    this.#socket.on('error', (error: Error & { code?: string }) => {
      refused ||= error.code === 'ECONNREFUSED'
      options.logger.warn({ err: error, address }, 'relay link failed')
    })
    this.#socket.on('close', () => {
      clearInterval(pinger)
      onGone(refused)
      const sessions = [...this.#sessions.values()]
      this.#sessions.clear()
      for (const { client } of sessions) {
        client.close(CloseCode.TryAgainLater, "the link to the room's server was lost; reconnect")
      }
    })
  }

  attach(opened: RelayedSession, client: Transport): ClientSession {
    const session = ++this.#nextSession
    this.#sessions.set(session, { client, room: opened.room })
    this.#send({ kind: 'open', session, opened })
    const leave = () => {
      if (this.#sessions.delete(session)) this.#send({ kind: 'leave', session })
    }
    return {
      receive: (frame) => {
        if (!this.#sessions.has(session)) return
        // What waits to reach the owner is held here: bounded, as a client's backlog is.
        if (this.#backlog > this.options.maxBufferedBytes) {
          client.close(CloseCode.TryAgainLater, "the room's server is not keeping up; reconnect")
          leave()
          return
        }
        this.#send({ kind: 'frame', session, frame })
      },
      close: (code, reason) => {
        client.close(code, reason)
        leave()
      },
      leave,
    }
  }

  close(): void {
    this.#socket.terminate()
  }

  get sessionCount(): number {
    return this.#sessions.size
  }

  *rooms(): Iterable<string> {
    for (const { room } of this.#sessions.values()) yield room
  }

  /** Bytes sent towards the owner and not yet taken by its socket (or waiting for the link to open). */
  get #backlog(): number {
    return this.#socket.bufferedAmount + (this.#queued?.reduce((sum, bytes) => sum + bytes.length, 0) ?? 0)
  }

  #send(message: RelayMessage): void {
    const bytes = encodeRelayMessage(message)
    if (this.#queued) this.#queued.push(bytes)
    else if (this.#socket.readyState === WebSocket.OPEN) {
      corkUntilTurnEnds(this.#corked)
      this.#socket.send(bytes)
    }
  }

  get #tcp(): Socket | undefined {
    // ws keeps the connected TCP socket here once the link is open.
    return (this.#socket as unknown as { _socket?: Socket })._socket
  }

  #received(data: Buffer): void {
    let message: RelayMessage
    try {
      message = decodeRelayMessage(data)
    } catch (error) {
      this.options.logger.error({ err: error }, 'a relay message that could not be read; closing the link')
      this.#socket.terminate()
      return
    }
    if (message.kind === 'frame') this.#deliver(message.session, message.frame)
    else if (message.kind === 'fanout')
      for (const session of message.sessions) this.#deliver(session, message.frame)
    else if (message.kind === 'close') {
      const client = this.#sessions.get(message.session)?.client
      this.#sessions.delete(message.session)
      client?.close(message.code, message.reason)
    }
  }

  #deliver(session: number, frame: Uint8Array): void {
    const client = this.#sessions.get(session)?.client
    if (!client) return // it left meanwhile
    client.send(frame)
    // The owner sees the link's backlog, not this socket's: a slow reader is closed here.
    if (client.bufferedAmount > this.options.maxBufferedBytes) {
      client.close(CloseCode.SlowConsumer, 'too slow to receive updates')
      this.options.metrics.connectionsClosed.labels('SlowConsumer').inc()
      this.#sessions.delete(session)
      this.#send({ kind: 'leave', session })
    }
  }
}
