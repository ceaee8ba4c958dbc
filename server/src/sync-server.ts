import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { CloseCode } from '@symphony/client/wire'
import { openAdapters } from './adapters/select-adapters.js'
import { createAuthenticator } from './auth/authenticator.js'
import { documentMemory } from './core/document-memory.js'
import { DocumentReads } from './core/document-reads.js'
import { EventStream } from './core/event-stream.js'
import { MemoryBudget } from './core/memory-budget.js'
import { RoomManager } from './core/room-manager.js'
import { RoomStateSource } from './core/room-state-source.js'
import type { ServerEvents } from './core/server-events.js'
import { ServerMetrics } from './metrics.js'
import type { HooksObserver } from './observers/hooks-observer.js'
import { observeServer } from './observers/observe-server.js'
import type { AdapterContext, Adapters } from './ports/adapters.js'
import type { ServerSample } from './ports/metadata-sink.js'
import { yjsVersionCheck } from './protocol/yjs-internals.js'
import { type RoomApi, roomApi } from './room-api.js'
import type { ResolvedServerOptions } from './server-options.js'
import { readServerSample } from './server-sample.js'
import { holdForApi } from './transport/api-writer.js'
import { createRequestHandler } from './transport/http-routes.js'
import { createInternalEndpoint } from './transport/internal-endpoint.js'
import { roomOwners } from './transport/owner-forward.js'
import { RelayHost } from './transport/relay-host.js'
import { RelayLinks } from './transport/relay-links.js'
import { createRestApi } from './transport/rest-api.js'
import { RoomSessions } from './transport/room-sessions.js'
import { loadStaticFiles } from './transport/static-files.js'
import { createVersionsRoute } from './transport/versions-route.js'
import { type Relay, WebSocketGateway } from './transport/websocket-gateway.js'

/** What a forwarded request's owner may take beyond its room's load and save, before it is given up. */
const FORWARD_SLACK_MS = 5_000

/** Clients whose updates a room may hold waiting for missing dependencies at once. */
const MAX_PENDING_CLIENTS = 1_000

/**
 * One sync server: HTTP + WebSocket on one port, the internal endpoint on another, rooms, adapters.
 * Started by `createSyncServer`, which settles every option first.
 */
export class SyncServer {
  readonly metrics: ServerMetrics
  /** What happens on this server, as one typed stream: `server.events.on('connection.joined', …)`. */
  readonly events: ServerEvents
  readonly #events: EventStream
  readonly #hooks: HooksObserver
  readonly manager: RoomManager
  /** What clients make this server hold, bounded by `limits.memoryBudgetBytes`. */
  readonly memory: MemoryBudget
  readonly #http: Server
  readonly #gateway: WebSocketGateway
  readonly #adapters: Required<Adapters>
  readonly #startedAt = Date.now()
  #ready = false
  #shutdown: Promise<string[]> | null = null
  #sampleTimer: NodeJS.Timeout | undefined
  /** With an internal port: the relay's owner side (host) and edge side (links). */
  #relayParts: { host: RelayHost; links: RelayLinks } | null = null
  /** Whole documents read as JSON (the REST API, `room(name).toJSON()`): bounded and charged. */
  readonly #reads: DocumentReads

  private constructor(
    private readonly options: ResolvedServerOptions,
    private readonly internal: { server: Server; address: string } | null,
  ) {
    const { logger } = options
    this.metrics = new ServerMetrics(options.build)
    this.memory = new MemoryBudget({ limitBytes: options.limits.memoryBudgetBytes, logger })
    this.#reads = new DocumentReads(this.memory)
    const largest = documentMemory(options.limits.maxDocumentStructs, options.limits.maxDocumentBytes)
    if (largest > this.memory.documentsLimitBytes) {
      // A room at the ceilings would be unloaded as soon as it loaded: one or the other is wrong.
      logger.warn(
        { largestDocumentBytes: largest, documentsLimitBytes: this.memory.documentsLimitBytes },
        'a document at MAX_DOCUMENT_STRUCTS and MAX_DOCUMENT_BYTES would not fit the memory budget: raise MEMORY_BUDGET_BYTES or lower the ceilings',
      )
    }
    const yjs = yjsVersionCheck()
    if (!yjs.matches) {
      // The update guard reads Yjs internals (protocol/yjs-internals.ts): another release may
      // change them without a major version.
      logger.warn(yjs, `yjs ${yjs.installed} is not the release this server was tested with (${yjs.tested})`)
    }
    this.metrics.watchMemoryBudget(this.memory)
    this.#adapters = this.#openAdapters(internal?.address ?? '')
    this.#events = new EventStream(logger)
    this.events = this.#events
    this.#hooks = observeServer(this.#events, {
      metrics: this.metrics,
      metadata: this.#adapters.metadata,
      webhooks: this.#adapters.events,
      hooks: options.hooks,
      hookTimeoutMs: options.hookTimeoutMs,
      logger,
    })
    const stateSource = new RoomStateSource({
      snapshots: this.#adapters.snapshots,
      journal: this.#adapters.journal,
      observeWait: this.metrics.observeLoadWait,
    })
    this.manager = new RoomManager(
      {
        ...this.#adapters,
        stateSource,
        events: this.#events,
        metrics: this.metrics,
        memory: this.memory,
        hooks: options.hooks,
        logger,
      },
      {
        roomGraceMs: options.roomGraceMs,
        registryWaitMs: options.registryWaitMs,
        loadRetry: { baseMs: options.roomLoadRetryMs, maxMs: options.roomLoadRetryMaxMs },
        snapshot: options.snapshot,
        maxDocumentBytes: options.limits.maxDocumentBytes,
        maxDocumentStructs: options.limits.maxDocumentStructs,
        waiting: {
          maxPendingBytes: options.limits.maxPendingBytes,
          maxPendingDeleteBytes: options.limits.maxPendingDeleteBytes,
          maxClients: MAX_PENDING_CLIENTS,
        },
        maxPresenceBytes: options.limits.maxPresenceBytes,
        hookTimeoutMs: options.hookTimeoutMs,
        serverId: options.serverId,
        // With AUTH=none there are no subjects to bind client ids to.
        bindAuthors: options.auth.mode !== 'none',
      },
    )
    // A room's saved versions: the REST API's routes, and the dashboard's restore on the internal port.
    const versions = createVersionsRoute({
      snapshots: this.#adapters.snapshots,
      reads: this.#reads,
      events: this.#events,
      hold: (name) => holdForApi(this.manager, name, options.joinWaitMs),
      save: (name) => this.manager.save(name),
      saveWaitMs: options.apiSaveWaitMs,
    })
    const authenticator = createAuthenticator(options.auth)
    const { retryLater } = this.manager
    const sessions = new RoomSessions({
      manager: this.manager,
      events: this.#events,
      metrics: this.metrics,
      memory: this.memory,
      logger,
      limits: options.limits,
      joinWaitMs: options.joinWaitMs,
      retryLater,
    })
    const relay =
      internal && options.internal
        ? this.#openRelay(internal.server, sessions, options.internal.token)
        : undefined
    // Requests for a room another server owns go to it; it may load the room, then wait for a save.
    const owners =
      relay && options.internal
        ? roomOwners({
            ownerElsewhere: relay.ownerElsewhere,
            token: options.internal.token,
            idleTimeoutMs: options.joinWaitMs + options.apiSaveWaitMs + FORWARD_SLACK_MS,
          })
        : undefined
    const api = options.apiSecret
      ? createRestApi({
          secret: options.apiSecret,
          room: (name) => this.room(name),
          limits: options.limits,
          list: { catalog: this.#adapters.metadata.catalog ?? null, maxLimit: options.apiMaxListLimit },
          versions,
          ...(owners ? { owners } : {}),
          metrics: this.metrics,
          logger,
        })
      : null
    internal?.server.on(
      'request',
      createInternalEndpoint({
        token: options.internal?.token ?? '',
        loadedIncarnation: (name) => this.manager.loadedIncarnation(name),
        dropDeleted: (name, generation) => this.manager.dropDeleted(name, generation),
        deleteRoom: (name) => this.room(name).delete(),
        versions,
        api,
        ...(owners ? { owners } : {}),
      }),
    )
    this.#gateway = new WebSocketGateway(
      {
        authenticator,
        sessions,
        ...(relay ? { relay } : {}),
        events: this.#events,
        metrics: this.metrics,
        onConnect: options.hooks.onConnect,
        retryLater,
        logger,
      },
      {
        limits: options.limits,
        serverId: options.serverId,
        allowedOrigins: options.allowedOrigins,
        hookTimeoutMs: options.hookTimeoutMs,
      },
    )
    const staticFiles = options.demoFolder ? loadStaticFiles(options.demoFolder) : new Map()
    this.#http = createServer(
      createRequestHandler({
        metrics: this.metrics,
        staticFiles,
        authenticator,
        devTokenSecret: options.devTokenSecret,
        api,
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

  /** The relay of one copy per room: this server's side as owner (host) and as edge (links). */
  #openRelay(internalServer: Server, sessions: RoomSessions, token: string): Relay {
    const { limits, logger } = this.options
    const host = new RelayHost({ sessions, token, maxMessageBytes: limits.maxMessageBytes, logger })
    internalServer.on('upgrade', host.handleUpgrade)
    const links = new RelayLinks({
      token,
      maxMessageBytes: limits.maxMessageBytes,
      maxBufferedBytes: limits.maxBufferedBytes,
      metrics: this.metrics,
      logger,
    })
    this.#relayParts = { host, links }
    this.metrics.watchRelayed(links)
    return {
      links,
      ownerElsewhere: (room) =>
        this.manager.ownerElsewhere(room, (owner) => links.unreachable(owner.internalAddress)),
    }
  }

  #openAdapters(internalAddress: string): Required<Adapters> {
    const { options } = this
    const context: AdapterContext = {
      self: { serverId: options.serverId, internalAddress },
      address: internalAddress || `${options.host}:${options.port}`,
      logger: options.logger,
      outcomes: this.metrics.dependencies,
      sample: () => this.sample(),
      metadataSampleIntervalMs: options.metadataSampleIntervalMs,
    }
    const given = typeof options.adapters === 'function' ? options.adapters(context) : options.adapters
    return openAdapters(options.backends, context, given)
  }

  static async start(options: ResolvedServerOptions): Promise<SyncServer> {
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

  /**
   * The room `name`, from your code: apply an update (with every check a REST write gets), read
   * its state or JSON, send a broadcast event, delete it (`RoomApi`). Each call loads the room if
   * this server does not hold it and holds it while it runs. Throws `ROOM_NAME_INVALID` (400) for
   * a name the server refuses.
   */
  room(name: string): RoomApi {
    const { serverId, joinWaitMs, apiSaveWaitMs } = this.options
    return roomApi(name, {
      manager: this.manager,
      serverId,
      joinWaitMs,
      saveWaitMs: apiSaveWaitMs,
      reads: this.#reads,
    })
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
   * Graceful stop: refuse new clients, save every dirty room, give up the rooms it owns, close
   * clients with "going away" so they reconnect elsewhere (those relayed here too), save what they
   * sent meanwhile, deregister and release the adapters.
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
    this.#relayParts?.host.stopAccepting()
    const httpClosed = new Promise((resolve) => this.#http.close(resolve))
    this.#http.closeIdleConnections()
    await this.manager.flushAll(deadline)
    // Released before the clients go, so they reconnect to the next owner, not back to this one.
    if (this.#relayParts) await this.manager.releaseAll()
    await this.#gateway.closeAll(CloseCode.GoingAway, 'server shutting down')
    // The clients relayed here from other servers, and the links to other owners, go too.
    this.#relayParts?.host.close()
    this.#relayParts?.links.close()
    const unsaved = await this.manager.flushAll(deadline)
    await this.manager.unloadAll()
    await this.#hooks.settle() // the app's last onChange calls, before the adapters close
    this.memory.stop()
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
