import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CloseCode } from '@symphony/client/close-codes'
import { type AuthConfig, createAuthenticator } from './auth/authenticator.js'
import type { Limits } from './config.js'
import { RoomManager } from './core/room-manager.js'
import { type PeerStateFetcher, RoomStateSource } from './core/room-state-source.js'
import type { SnapshotPolicy } from './core/snapshot-writer.js'
import type { Logger } from './logger.js'
import { ServerMetrics } from './metrics.js'
import type { MetadataSink } from './ports/metadata-sink.js'
import type { PubSub } from './ports/pubsub.js'
import type { RoomRegistry } from './ports/room-registry.js'
import type { SnapshotStore } from './ports/snapshot-store.js'
import { createRequestHandler } from './transport/http-routes.js'
import { loadStaticFiles } from './transport/static-files.js'
import { WebSocketGateway } from './transport/websocket-gateway.js'

export interface Adapters {
  pubsub: PubSub
  registry: RoomRegistry
  snapshots: SnapshotStore
  metadata: MetadataSink
}

export interface SyncServerOptions {
  port: number
  host: string
  serverId: string
  auth: AuthConfig
  limits: Limits
  snapshot: SnapshotPolicy
  roomGraceMs: number
  shutdownTimeoutMs: number
  adapters: Adapters
  logger: Logger
  /** Folder of the built demo page served at `/`, or null to serve none. */
  demoFolder: string | null
  fetchPeerState?: PeerStateFetcher
}

/** One sync server: HTTP + WebSocket on one port, rooms, and its adapters. */
export class SyncServer {
  readonly metrics = new ServerMetrics()
  readonly manager: RoomManager
  readonly #http: Server
  readonly #gateway: WebSocketGateway
  readonly #startedAt = Date.now()
  #ready = false
  #shutdown: Promise<string[]> | null = null

  private constructor(private readonly options: SyncServerOptions) {
    const { adapters, logger } = options
    const stateSource = new RoomStateSource(
      adapters.registry,
      adapters.snapshots,
      options.fetchPeerState ?? null,
      logger,
    )
    this.manager = new RoomManager(
      { ...adapters, stateSource, metrics: this.metrics, logger },
      {
        graceMs: options.roomGraceMs,
        snapshot: options.snapshot,
        maxDocumentBytes: options.limits.maxDocumentBytes,
      },
    )
    this.#gateway = new WebSocketGateway(
      {
        authenticator: createAuthenticator(options.auth),
        manager: this.manager,
        metadata: adapters.metadata,
        metrics: this.metrics,
        logger,
      },
      options.limits,
      options.serverId,
    )
    const staticFiles = options.demoFolder ? loadStaticFiles(options.demoFolder) : new Map()
    this.#http = createServer(
      createRequestHandler({ metrics: this.metrics, staticFiles, health: () => this.#health() }),
    )
    this.#http.on('upgrade', this.#gateway.handleUpgrade)
  }

  static async start(options: SyncServerOptions): Promise<SyncServer> {
    const server = new SyncServer(options)
    await new Promise<void>((resolve, reject) => {
      server.#http.once('error', reject)
      server.#http.listen(options.port, options.host, () => resolve())
    })
    server.#ready = true
    return server
  }

  get port(): number {
    return (this.#http.address() as AddressInfo).port
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
    const { logger, adapters, shutdownTimeoutMs } = this.options
    const deadline = Date.now() + shutdownTimeoutMs * 0.8
    this.#ready = false
    this.#gateway.stopAccepting()
    const httpClosed = new Promise((resolve) => this.#http.close(resolve))
    this.#http.closeIdleConnections()
    await this.manager.flushAll(deadline)
    await this.#gateway.closeAll(CloseCode.GoingAway, 'server shutting down')
    const unsaved = await this.manager.flushAll(deadline)
    await this.manager.unloadAll()
    await httpClosed
    await Promise.all(Object.values(adapters).map((adapter) => adapter.close()))
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
    }
  }
}
