import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CloseCode } from '@symphony/client/wire'
import { type AuthConfig, createAuthenticator } from './auth/authenticator.js'
import type { Limits } from './config.js'
import { RoomManager } from './core/room-manager.js'
import { type PeerStateFetcher, RoomStateSource } from './core/room-state-source.js'
import type { SnapshotPolicy } from './core/snapshot-writer.js'
import type { Logger } from './logger.js'
import { type BuildInfo, ServerMetrics } from './metrics.js'
import type { DependencyOutcomes } from './ports/dependency-outcomes.js'
import type { MetadataSink, ServerSample } from './ports/metadata-sink.js'
import type { PubSub } from './ports/pubsub.js'
import { NO_ROOM_EVENTS, type RoomEventSink } from './ports/room-events.js'
import type { PeerServer, RoomRegistry } from './ports/room-registry.js'
import type { SnapshotStore } from './ports/snapshot-store.js'
import type { UpdateJournal } from './ports/update-journal.js'
import { readServerSample } from './server-sample.js'
import { SERVER_VERSION } from './server-version.js'
import { createRequestHandler } from './transport/http-routes.js'
import { createInternalEndpoint } from './transport/internal-endpoint.js'
import { createPeerStateFetcher } from './transport/peer-state-client.js'
import { createRestApi } from './transport/rest-api.js'
import { loadStaticFiles } from './transport/static-files.js'
import { WebSocketGateway } from './transport/websocket-gateway.js'

/** Clients whose updates a room may hold waiting for missing dependencies at once. */
const MAX_PENDING_CLIENTS = 1_000

export interface Adapters {
  pubsub: PubSub
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  metadata: MetadataSink
  /** Webhooks; none when unset. */
  events?: RoomEventSink
}

/** What adapters may read from the server they serve (called later, never while being built). */
export interface AdapterProbes {
  /** Where adapters report each operation's success or failure (`/healthz`, error counters). */
  outcomes: DependencyOutcomes
  /** The server's load and running totals now, for the metadata sink's server samples. */
  sample: () => Promise<ServerSample>
}

/** The endpoint peers fetch room state from; its host is what this server advertises. */
export interface InternalEndpointOptions {
  port: number
  advertisedHost: string
  token: string
  fetchTimeoutMs: number
}

export interface SyncServerOptions {
  port: number
  host: string
  serverId: string
  auth: AuthConfig
  limits: Limits
  /** Browser origins allowed to open a WebSocket (empty or unset: any). */
  allowedOrigins?: readonly string[]
  snapshot: SnapshotPolicy
  roomGraceMs: number
  antiEntropyIntervalMs: number
  /** How often every loaded room's connections and size go to the metadata sink (0 or unset: never). */
  metadataSampleIntervalMs?: number
  shutdownTimeoutMs: number
  /** Null in single-server mode: there are no peers to serve. */
  internal: InternalEndpointOptions | null
  /** Builds the adapters once this server's peer address is known. */
  createAdapters: (self: PeerServer, probes: AdapterProbes) => Adapters
  /** For `symphony_build_info`; unset: this package's version, commit "unknown". */
  build?: BuildInfo
  logger: Logger
  /** Folder of the built demo page served at `/`, or null to serve none. */
  demoFolder: string | null
  /** Development only: the secret `GET /dev/token` signs with; null or unset: no such route. */
  devTokenSecret?: string | null
  /** `API_SECRET`: the REST API's bearer secret; null or unset: the API is off. */
  apiSecret?: string | null
}

/** One sync server: HTTP + WebSocket on one port, the internal endpoint on another, rooms, adapters. */
export class SyncServer {
  readonly metrics: ServerMetrics
  readonly manager: RoomManager
  readonly #http: Server
  readonly #gateway: WebSocketGateway
  readonly #adapters: Required<Adapters>
  readonly #startedAt = Date.now()
  #ready = false
  #shutdown: Promise<string[]> | null = null
  #sampleTimer: NodeJS.Timeout | undefined

  private constructor(
    private readonly options: SyncServerOptions,
    private readonly internal: { server: Server; address: string } | null,
  ) {
    const { logger } = options
    this.metrics = new ServerMetrics(options.build ?? { version: SERVER_VERSION, commit: 'unknown' })
    const self = { serverId: options.serverId, internalAddress: internal?.address ?? '' }
    this.#adapters = {
      events: NO_ROOM_EVENTS,
      ...options.createAdapters(self, { outcomes: this.metrics.dependencies, sample: () => this.sample() }),
    }
    const fetchPeerState: PeerStateFetcher | null = options.internal
      ? createPeerStateFetcher(options.internal.token, options.internal.fetchTimeoutMs)
      : null
    const stateSource = new RoomStateSource({
      registry: this.#adapters.registry,
      snapshots: this.#adapters.snapshots,
      journal: this.#adapters.journal,
      fetchFromPeer: fetchPeerState,
      logger,
    })
    this.manager = new RoomManager(
      { ...this.#adapters, stateSource, metrics: this.metrics, logger },
      {
        graceMs: options.roomGraceMs,
        snapshot: options.snapshot,
        maxDocumentBytes: options.limits.maxDocumentBytes,
        waiting: {
          maxStructBytes: options.limits.maxPendingBytes,
          maxDeleteBytes: options.limits.maxPendingDeleteBytes,
          maxClients: MAX_PENDING_CLIENTS,
        },
        maxPresenceBytes: options.limits.maxPresenceBytes,
        antiEntropyIntervalMs: options.antiEntropyIntervalMs,
      },
    )
    internal?.server.on(
      'request',
      createInternalEndpoint({
        token: options.internal?.token ?? '',
        loadedRoom: (name) => this.manager.loadedRoom(name),
        deleteRoom: (name) => this.manager.delete(name),
      }),
    )
    const authenticator = createAuthenticator(options.auth)
    this.#gateway = new WebSocketGateway(
      {
        authenticator,
        manager: this.manager,
        metadata: this.#adapters.metadata,
        events: this.#adapters.events,
        metrics: this.metrics,
        logger,
      },
      options.limits,
      options.serverId,
      new Set(options.allowedOrigins),
    )
    const staticFiles = options.demoFolder ? loadStaticFiles(options.demoFolder) : new Map()
    this.#http = createServer(
      createRequestHandler({
        metrics: this.metrics,
        staticFiles,
        authenticator,
        devTokenSecret: options.devTokenSecret ?? null,
        api: options.apiSecret
          ? createRestApi({
              secret: options.apiSecret,
              serverId: options.serverId,
              manager: this.manager,
              limits: options.limits,
              metrics: this.metrics,
              logger,
            })
          : null,
        health: () => this.#health(),
      }),
    )
    this.#http.on('upgrade', this.#gateway.handleUpgrade)
    this.metrics.watchMetadata(() => this.#adapters.metadata.stats())
    this.metrics.watchWebhooks(() => this.#adapters.events.stats())
    this.metrics.watchJournalBacklog(() => this.manager.journalBacklog())
    if (options.metadataSampleIntervalMs) {
      const { metadata } = this.#adapters
      this.#sampleTimer = setInterval(
        () => this.manager.sampleRooms(metadata),
        options.metadataSampleIntervalMs,
      )
      this.#sampleTimer.unref()
    }
  }

  static async start(options: SyncServerOptions): Promise<SyncServer> {
    let internal: { server: Server; address: string } | null = null
    if (options.internal) {
      const server = createServer()
      const port = await listen(server, options.internal.port, options.host)
      internal = { server, address: `${options.internal.advertisedHost}:${port}` }
    }
    const syncServer = new SyncServer(options, internal)
    await listen(syncServer.#http, options.port, options.host)
    syncServer.#ready = true
    return syncServer
  }

  get port(): number {
    return (this.#http.address() as AddressInfo).port
  }

  /** Load and running totals now (see `readServerSample`). */
  sample(): Promise<ServerSample> {
    return readServerSample(this.metrics, {
      connections: this.#gateway.connectionCount,
      rooms: this.manager.roomCount,
    })
  }

  /** `host:port` peers fetch room state from, or null in single-server mode. */
  get internalAddress(): string | null {
    return this.internal?.address ?? null
  }

  /**
   * Graceful stop: refuse new clients, save every dirty room, close clients with "going away" so
   * they reconnect elsewhere, save what they sent meanwhile, deregister and release the adapters.
   * Resolves with the rooms that could not be saved before the shutdown timeout.
   */
  shutdown(): Promise<string[]> {
    this.#shutdown ??= this.#stop()
    return this.#shutdown
  }

  async #stop(): Promise<string[]> {
    const { logger, shutdownTimeoutMs } = this.options
    const deadline = Date.now() + shutdownTimeoutMs * 0.8
    this.#ready = false
    clearInterval(this.#sampleTimer)
    this.#gateway.stopAccepting()
    const httpClosed = new Promise((resolve) => this.#http.close(resolve))
    this.#http.closeIdleConnections()
    await this.manager.flushAll(deadline)
    await this.#gateway.closeAll(CloseCode.GoingAway, 'server shutting down')
    const unsaved = await this.manager.flushAll(deadline)
    await this.manager.unloadAll()
    await httpClosed
    if (this.internal) {
      const internalClosed = new Promise((resolve) => this.internal?.server.close(resolve))
      this.internal.server.closeAllConnections()
      await internalClosed
    }
    await Promise.all(Object.values(this.#adapters).map((adapter) => adapter.close()))
    if (unsaved.length > 0) logger.error({ rooms: unsaved }, 'shut down with unsaved rooms')
    else logger.info('shut down cleanly')
    return unsaved
  }

  #health() {
    return {
      ready: this.#ready,
      serverId: this.options.serverId,
      rooms: this.manager.roomCount,
      connections: this.#gateway.connectionCount,
      uptimeSeconds: Math.round((Date.now() - this.#startedAt) / 1000),
      dependencies: this.metrics.dependencies.report(),
    }
  }
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port))
  })
}
