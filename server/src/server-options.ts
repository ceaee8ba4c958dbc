import { DEFAULT_MAX_PRESENCE_BYTES } from '@symphony/client/wire'
import type { AuthConfig } from './auth/authenticator.js'
import type { Backends } from './backends.js'
import type { SnapshotPolicy } from './core/snapshot-writer.js'
import type { Logger } from './logger.js'
import type { BuildInfo } from './metrics.js'
import type { AdapterContext, Adapters } from './ports/adapters.js'
import type { ServerHooks } from './server-hooks.js'

const MiB = 1024 * 1024

export interface Limits {
  maxMessageBytes: number
  maxDocumentBytes: number
  /** Structs a document may hold, a client counting as 8 (what its memory grows with). */
  maxDocumentStructs: number
  /** Bytes of updates a room may hold waiting for updates it never received. */
  maxPendingBytes: number
  /** Bytes of deletions of items a room does not have yet (re-read on every update). */
  maxPendingDeleteBytes: number
  /** Largest presence state (JSON bytes) one client may set. */
  maxPresenceBytes: number
  maxBufferedBytes: number
  /**
   * What clients may make the server hold, over all connections and rooms: unsent bytes, frames
   * waiting for their room, big updates being applied, presence. Past it, the connections holding
   * the most are closed (4013) and big updates refused (1013).
   */
  memoryBudgetBytes: number
  maxConnections: number
  maxConnectionsPerRoom: number
  messagesPerSecond: number
  messageBurst: number
  pingIntervalMs: number
}

/** The limits a server applies when not told otherwise (the environment's defaults too). */
export const DEFAULT_LIMITS: Limits = {
  maxMessageBytes: 16 * MiB,
  maxDocumentBytes: 64 * MiB,
  // At most 100–200 MB of Yjs objects, where an attacker's 2 MiB of structs builds this many; a
  // real document holds one per 18 (text with a long history of scattered edits) to 80 bytes.
  maxDocumentStructs: 500_000,
  maxPendingBytes: MiB,
  maxPendingDeleteBytes: 32 * 1024,
  maxPresenceBytes: DEFAULT_MAX_PRESENCE_BYTES,
  maxBufferedBytes: 32 * MiB,
  // The default AWS task has 1 GiB: a baseline of about 160 MiB, this, and room to spare.
  memoryBudgetBytes: 320 * MiB,
  maxConnections: 20_000,
  maxConnectionsPerRoom: 2_000,
  messagesPerSecond: 200,
  messageBurst: 400,
  pingIntervalMs: 30_000,
}

/** Saves within 30 s of a change; a failed save is retried after 1 s, doubling up to 30 s. */
export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = {
  intervalMs: 30_000,
  retryBaseMs: 1_000,
  retryMaxMs: 30_000,
}

/** The most rooms one page of `GET /api/v1/rooms` may ask for (the environment's default too). */
export const DEFAULT_API_MAX_LIST_LIMIT = 1_000

/** Default durations, in ms (the environment's defaults too). */
export const DEFAULT_TIMINGS = {
  roomGraceMs: 5_000,
  metadataSampleIntervalMs: 10_000,
  shutdownTimeoutMs: 25_000,
  registryLeaseMs: 10_000,
  apiSaveWaitMs: 30_000,
  registryWaitMs: 2_000,
  joinWaitMs: 30_000,
  roomLoadRetryMs: 250,
  roomLoadRetryMaxMs: 5_000,
  hookTimeoutMs: 5_000,
} as const

/** The internal port: other servers' relay links and forwarded requests, the dashboard's calls. */
export interface InternalEndpointOptions {
  /** 0: any free port. */
  port: number
  /** The bearer token peers (and the dashboard) must send. */
  token: string
  /**
   * Host peers reach this server at. Unset: `host` when it names one address (the endpoint
   * listens there only), else the ECS task's private IP when `taskMetadataUrl` is given, else the
   * first non-loopback IPv4 address, else loopback.
   */
  advertisedHost?: string | undefined
  /** The ECS task metadata endpoint (ECS sets `ECS_CONTAINER_METADATA_URI_V4`). */
  taskMetadataUrl?: string | undefined
}

/**
 * How to run a sync server (`createSyncServer`). Only `auth` is required: the rest defaults to a
 * single server on 127.0.0.1, a free port, embedded adapters and the production limits.
 */
export interface SyncServerOptions {
  /** Who may open which room: `{ mode: 'none' }` (anyone, everything) or JWT settings. */
  auth: AuthConfig
  /** Default 0: a free port (read it from `server.port`). */
  port?: number
  /** Default '127.0.0.1'; '0.0.0.0' to serve other machines. */
  host?: string
  /** Names this server in the registry, metadata and logs. Default: host name, pid and a random tag. */
  serverId?: string
  /** Each limit defaults to `DEFAULT_LIMITS`. */
  limits?: Partial<Limits>
  /** Browser origins allowed to open a WebSocket. Default (empty): any. */
  allowedOrigins?: readonly string[]
  /** When rooms are saved; each field defaults to `DEFAULT_SNAPSHOT_POLICY`. */
  snapshot?: Partial<SnapshotPolicy>
  /** How long an empty room stays loaded, for reconnects. Default 5 000 ms. */
  roomGraceMs?: number
  /** How often rooms and this server are sampled for the metadata sink (0: never). Default 10 000 ms. */
  metadataSampleIntervalMs?: number
  /** The longest `shutdown()` spends saving rooms. Default 25 000 ms. */
  shutdownTimeoutMs?: number
  /** The internal port; a cluster needs it. Default null: single server. */
  internal?: InternalEndpointOptions | null
  /**
   * The built-in adapter for each port, by settings (what `parseConfig` reads from SNAPSHOTS,
   * JOURNAL…). A port not named here nor in `adapters` gets its embedded adapter: the
   * registry in memory, snapshots and journal in ./data, no metadata, no webhooks.
   */
  backends?: Partial<Backends>
  /**
   * Adapters you built (or a function building them once the server knows its address), used
   * instead of `backends` for the ports they fill. The server closes them at shutdown.
   */
  adapters?: Partial<Adapters> | ((context: AdapterContext) => Partial<Adapters>)
  /** An embedding app's hooks into each room's life (`server-hooks.ts`); default none. */
  hooks?: ServerHooks
  /** For `symphony_build_info`. Default: this package's version, commit "unknown". */
  build?: BuildInfo
  /** Default: silent. */
  logger?: Logger
  /** Folder of a built demo page to serve at `/`. Default null: none. */
  demoFolder?: string | null
  /** Development only: the secret `GET /dev/token` signs with. Default null: no such route. */
  devTokenSecret?: string | null
  /** The REST API's bearer secret. Default null: the API is off. */
  apiSecret?: string | null
  /**
   * The longest a REST write waits for its update to be durable before answering 503
   * `UPDATE_NOT_SAVED` (it is applied, and saved once the stores answer). Default 30 000 ms.
   */
  apiSaveWaitMs?: number
  /** The most rooms one page of `GET /api/v1/rooms` may ask for (`limit`). Default 1 000. */
  apiMaxListLimit?: number
  /**
   * The longest a room's load, unload or deletion waits for the room registry (its failures are
   * tolerated: a lease refresh registers later, a lease expires). Default 2 000 ms.
   */
  registryWaitMs?: number
  /**
   * The longest a client waits for its room to load; then it is closed with 1013 and its
   * reconnection joins the load still going. Default 30 000 ms.
   */
  joinWaitMs?: number
  /**
   * A room load that failed is tried again after this, doubling up to `roomLoadRetryMaxMs`, while
   * any client still waits for the room. Default 250 ms.
   */
  roomLoadRetryMs?: number
  /** The longest pause between a room's load attempts. Default 5 000 ms. */
  roomLoadRetryMaxMs?: number
  /**
   * The longest a hook (`hooks`: beforeApply, onLoad, onStore, an app message's handler) may take
   * before the server goes on without it (each hook says how). Default 5 000 ms.
   */
  hookTimeoutMs?: number
}

/** Every option decided: what a `SyncServer` runs with. */
export interface ResolvedServerOptions
  extends Required<Omit<SyncServerOptions, 'limits' | 'snapshot' | 'backends' | 'internal' | 'adapters'>> {
  limits: Limits
  snapshot: SnapshotPolicy
  backends: Backends
  internal: { port: number; token: string; advertisedHost: string } | null
  adapters: SyncServerOptions['adapters']
}
