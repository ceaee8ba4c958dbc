import type * as Y from 'yjs'
import { MemoryRegistryTable, MemoryRoomRegistry } from '../../../src/adapters/memory-room-registry.js'
import { MemorySnapshotStore } from '../../../src/adapters/memory-snapshot-store.js'
import { MemoryJournalTable, MemoryUpdateJournal } from '../../../src/adapters/memory-update-journal.js'
import { admit } from '../../../src/core/admission.js'
import { type Access, Connection, type ConnectionLimits } from '../../../src/core/connection.js'
import { EventStream } from '../../../src/core/event-stream.js'
import { RoomManager, type RoomManagerOptions } from '../../../src/core/room-manager.js'
import { RoomStateSource } from '../../../src/core/room-state-source.js'
import { ServerMetrics } from '../../../src/metrics.js'
import { observeMetrics } from '../../../src/observers/metrics-observer.js'
import type { SnapshotStore } from '../../../src/ports/snapshot-store.js'
import type { UpdateJournal } from '../../../src/ports/update-journal.js'
import type { ServerHooks } from '../../../src/server-hooks.js'
import { type LogEntry, recordingLogger } from '../../helpers/recording-logger.js'
import { TestClient } from './test-client.js'

export const OPTIONS: RoomManagerOptions = {
  roomGraceMs: 5_000,
  snapshot: { intervalMs: 1_000, retryBaseMs: 100, retryMaxMs: 800 },
  maxDocumentBytes: 1 << 20,
  maxDocumentStructs: 1_000_000,
  waiting: { maxPendingBytes: 1 << 20, maxPendingDeleteBytes: 1 << 15, maxClients: 1_000 },
  maxPresenceBytes: 16 * 1024,
}

export const LIMITS: ConnectionLimits = {
  messagesPerSecond: 1_000,
  messageBurst: 1_000,
  maxBufferedBytes: 1 << 20,
}

export interface ServerSetup {
  /** Stands in for the shared store (e.g. a `ControlledSnapshotStore` around `world.snapshots`). */
  snapshots?: SnapshotStore
  journal?: UpdateJournal
  options?: Partial<RoomManagerOptions>
  /** The embedding app's hooks. */
  hooks?: ServerHooks
  /** How long a client waits for its room to load before it is closed (1013). Default 30 s. */
  joinWaitMs?: number
}

export interface ConnectOptions {
  access?: Access
  limits?: Partial<ConnectionLimits>
  /** The client's document, e.g. one holding offline edits. */
  doc?: Y.Doc
  /** What the client names as its copy's incarnation (`?incarnation=`); default: nothing. */
  incarnation?: number | 'none'
  /** The token's subject; default: `user-<n>`, a user of its own. */
  userId?: string
}

/**
 * Servers of one process sharing what servers of a cluster share (registry, snapshot
 * store, journal), all in memory: each server is a real `RoomManager`, each client a real
 * `Connection` wired as the WebSocket gateway wires it, over a `TestClient` socket pair.
 */
export class TestWorld {
  readonly registry = new MemoryRegistryTable()
  readonly snapshots = new MemorySnapshotStore()
  readonly journal = new MemoryJournalTable()
  readonly #servers: TestServer[] = []

  server(setup: ServerSetup = {}): TestServer {
    const server = new TestServer(this, `server-${this.#servers.length + 1}`, setup)
    this.#servers.push(server)
    return server
  }

  /** Ends every client and server (their timers too), saving nothing. */
  async close(): Promise<void> {
    await Promise.all(this.#servers.map((server) => server.crash()))
  }
}

export class TestServer {
  readonly manager: RoomManager
  readonly metrics = new ServerMetrics()
  readonly events: EventStream
  readonly logs: LogEntry[] = []
  readonly journal: UpdateJournal
  readonly #registry: MemoryRoomRegistry
  readonly #clients = new Set<TestClient>()
  readonly #joinWaitMs: number
  #nextId = 0

  constructor(
    world: TestWorld,
    readonly id: string,
    setup: ServerSetup,
  ) {
    const logger = recordingLogger(this.logs)
    this.events = new EventStream(logger)
    this.#joinWaitMs = setup.joinWaitMs ?? 30_000
    this.#registry = new MemoryRoomRegistry(
      { serverId: id, internalAddress: `${id}:0` },
      { leaseMs: 60_000, now: () => Date.now() },
      world.registry,
    )
    const snapshots = setup.snapshots ?? world.snapshots
    this.journal = setup.journal ?? new MemoryUpdateJournal(world.journal)
    const registry = this.#registry
    const stateSource = new RoomStateSource({ snapshots, journal: this.journal })
    // What the server wires: the core's events counted in its metrics.
    const events = this.events
    observeMetrics(events, this.metrics)
    this.manager = new RoomManager(
      {
        registry,
        snapshots,
        journal: this.journal,
        stateSource,
        events,
        metrics: this.metrics,
        ...(setup.hooks ? { hooks: setup.hooks } : {}),
        logger,
      },
      { ...OPTIONS, ...setup.options },
    )
  }

  /**
   * A client that opens a socket to `room`: like a provider it sends its sync step 1 at once,
   * before the room has loaded. `ready` settles once the connection joined the room.
   */
  connect(
    room: string,
    { access = 'rw', limits, doc, incarnation, userId }: ConnectOptions = {},
  ): TestClient & { ready: Promise<void> } {
    const leave = () => admission.leave()
    // The socket's close event comes after the close frame, on a later turn.
    const client = new TestClient(doc, () => queueMicrotask(leave))
    const connection = new Connection({
      id: `${this.id}:${++this.#nextId}`,
      roomName: room,
      incarnation: incarnation ?? null,
      identity: { userId: userId ?? `user-${this.#nextId}`, name: null, info: null, access, expiresAt: null },
      transport: client.transport,
      limits: { ...LIMITS, ...limits },
      metrics: this.metrics,
      events: this.events,
      logger: recordingLogger(this.logs),
    })
    client.plugInto((frame) => connection.receive(frame), leave)
    this.#clients.add(client)
    // As the gateway does: admitted before the client's first frame.
    const admission = admit(this.manager, connection, {
      joinWaitMs: this.#joinWaitMs,
      waits: this.metrics.joinWaits,
    })
    client.sendSyncStep1()
    return Object.assign(client, { ready: admission.joined })
  }

  errors(): LogEntry[] {
    return this.logs.filter((entry) => entry.level === 'error')
  }

  /** The process dies: nothing more is saved or trimmed, its subscriptions and leases stop. */
  async crash(): Promise<void> {
    for (const client of this.#clients) client.destroy()
    this.#clients.clear()
    await this.manager.unloadAll() // frees without a final save, as a crash would
    await Promise.all([this.#registry.close(), this.journal.close()])
  }
}
