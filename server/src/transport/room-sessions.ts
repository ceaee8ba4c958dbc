import { CloseCode } from '@symphony/client/wire'
import type { Limits } from '../config.js'
import { type Admission, admit } from '../core/admission.js'
import { Connection, type Identity, type Transport } from '../core/connection.js'
import type { CoreMetrics } from '../core/core-metrics.js'
import type { EventStream } from '../core/event-stream.js'
import type { MemoryBudget } from '../core/memory-budget.js'
import type { RetryLater } from '../core/pacing.js'
import type { RoomManager } from '../core/room-manager.js'
import type { ConnectionInfo } from '../core/server-events.js'
import type { Logger } from '../logger.js'
import type { Capabilities } from '../protocol/capabilities.js'
import { encodeSyncStatus } from '../protocol/codec.js'

const SYNC_STATUS_ANNOUNCEMENT = encodeSyncStatus(new Uint8Array(0))

/** A client joining a room here, over its own socket or relayed from another server. */
export interface SessionOpening {
  room: string
  identity: Identity
  /** The protocol extensions the client declared on the URL (`?syncStatus=1`, `?broadcast=1`). */
  capabilities: Capabilities
  /** The incarnation the client's copy belongs to (`?incarnation=`), `none`, or null: not asked. */
  incarnation: number | 'none' | null
  /** The connection's id (unique across servers and restarts). */
  id: string
  /** Who what the server holds for it is counted under (`RoomMember.heldBy`). */
  heldBy: string
  /** Who its pace is kept for (`RoomMember.pacedAs`). */
  pacedAs: string
  transport: Transport
  /**
   * Its room turned out to be owned by another server while it waited (`RoomMovedError`): the
   * session has left, its socket is still open, and `waiting` holds what the client sent meanwhile.
   * Unset: the client is closed with TryAgainLater and reconnects.
   */
  onMoved?: (waiting: Uint8Array[]) => void
}

/** A client's session as its socket sees it: here, or relayed to the room's owner. */
export interface ClientSession {
  /** A frame the client sent. */
  receive(frame: Uint8Array): void
  /** The server closes the client (shutdown, a dead socket). */
  close(code: number, reason: string): void
  /** The client is gone: leaves the room (once; later calls do nothing). */
  leave(): void
}

/** A client in its room here. */
export interface OpenSession extends ClientSession {
  readonly connection: Connection
  readonly admission: Admission
}

export interface RoomSessionsDeps {
  manager: RoomManager
  /** Told of each connection joined, left or refused. */
  events: EventStream
  metrics: CoreMetrics
  /** What each connection's unsent bytes and waiting frames are charged to. */
  memory?: MemoryBudget
  logger: Logger
  limits: Limits
  /** The longest a connection waits for its room to load before it is closed with 1013 (`JOIN_WAIT_MS`). */
  joinWaitMs: number
  retryLater: RetryLater
}

/**
 * Where a client joins its room on the server that owns it: its `Connection`, its admission,
 * the room's connection cap, and the joined and left events. The WebSocket gateway opens the
 * sessions of its own sockets here, the relay host those another server relays.
 */
export class RoomSessions {
  constructor(private readonly deps: RoomSessionsDeps) {}

  /** Opens the session, or closes its transport if the room is at its connection cap (null then). */
  open(opening: SessionOpening): OpenSession | null {
    const { manager, metrics, events, logger, memory, limits, joinWaitMs, retryLater } = this.deps
    const { room, transport, capabilities, onMoved, ...member } = opening
    if (manager.holders(room) >= limits.maxConnectionsPerRoom) {
      this.refused(room, 'ROOM_FULL')
      transport.close(CloseCode.RoomFull, 'room at connection capacity')
      return null
    }
    const connection = new Connection({
      ...member,
      roomName: room,
      transport,
      capabilities,
      ...{ limits, metrics, logger, memory, events, retryLater },
    })
    if (capabilities.has('sync-status')) connection.send(SYNC_STATUS_ANNOUNCEMENT)
    let left = false
    const leave = () => {
      if (left) return
      left = true
      admission.leave()
      events.emit({ type: 'connection.left', ...connectionInfo(connection), at: Date.now() })
    }
    const moved = onMoved
      ? () => {
          const waiting = connection.handOver()
          leave()
          onMoved(waiting)
        }
      : undefined
    // Admitted before any frame can arrive, so frames sent while the room loads wait in order.
    const admission = admit(manager, connection, {
      joinWaitMs,
      waits: metrics.joinWaits,
      retryLater,
      ...(moved ? { onMoved: moved } : {}),
    })
    events.emit({ type: 'connection.joined', ...connectionInfo(connection), at: Date.now() })
    return {
      connection,
      admission,
      receive: (frame) => connection.receive(frame),
      close: (code, reason) => connection.close(code, reason),
      leave,
    }
  }

  /** A connection refused before it joined: counted in `/metrics` by `code`. */
  refused(room: string | null, code: string): void {
    this.deps.events.emit({ type: 'connection.refused', room, code, at: Date.now() })
  }
}

function connectionInfo({ roomName, id, identity }: Connection): ConnectionInfo {
  const { userId, name, info, access } = identity
  return { room: roomName, connectionId: id, userId, name, info, access }
}
