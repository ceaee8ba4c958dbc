import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import type { Backends } from './backends.js'
import { silentLogger } from './logger.js'
import { NO_HOOKS } from './server-hooks.js'
import {
  DEFAULT_API_MAX_LIST_LIMIT,
  DEFAULT_LIMITS,
  DEFAULT_SNAPSHOT_POLICY,
  DEFAULT_TIMINGS,
  type InternalEndpointOptions,
  type ResolvedServerOptions,
  type SyncServerOptions,
} from './server-options.js'
import { SERVER_VERSION } from './server-version.js'
import { SyncServer } from './sync-server.js'
import { boundAddress, discoverInternalHost } from './transport/internal-host.js'

/**
 * Starts a sync server in this process and resolves once it listens: the library's way to run
 * one (`main.ts` is this plus the environment). See `SyncServerOptions` for the options and their
 * defaults; stop it with `server.shutdown()`.
 */
export async function createSyncServer(options: SyncServerOptions): Promise<SyncServer> {
  return SyncServer.start(await resolveOptions(options))
}

async function resolveOptions(options: SyncServerOptions): Promise<ResolvedServerOptions> {
  return {
    port: 0,
    host: '127.0.0.1',
    // Random too, so two servers embedded in one process keep apart in the registry and metadata.
    serverId: `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    allowedOrigins: [],
    roomGraceMs: DEFAULT_TIMINGS.roomGraceMs,
    metadataSampleIntervalMs: DEFAULT_TIMINGS.metadataSampleIntervalMs,
    shutdownTimeoutMs: DEFAULT_TIMINGS.shutdownTimeoutMs,
    apiSaveWaitMs: DEFAULT_TIMINGS.apiSaveWaitMs,
    apiMaxListLimit: DEFAULT_API_MAX_LIST_LIMIT,
    registryWaitMs: DEFAULT_TIMINGS.registryWaitMs,
    joinWaitMs: DEFAULT_TIMINGS.joinWaitMs,
    roomLoadRetryMs: DEFAULT_TIMINGS.roomLoadRetryMs,
    roomLoadRetryMaxMs: DEFAULT_TIMINGS.roomLoadRetryMaxMs,
    hookTimeoutMs: DEFAULT_TIMINGS.hookTimeoutMs,
    build: { version: SERVER_VERSION, commit: 'unknown' },
    logger: silentLogger,
    demoFolder: null,
    devTokenSecret: null,
    apiSecret: null,
    hooks: NO_HOOKS,
    ...withoutUnset(options),
    limits: { ...DEFAULT_LIMITS, ...withoutUnset(options.limits ?? {}) },
    snapshot: { ...DEFAULT_SNAPSHOT_POLICY, ...withoutUnset(options.snapshot ?? {}) },
    backends: { ...embeddedBackends(), ...withoutUnset(options.backends ?? {}) },
    internal: options.internal ? await resolveInternal(options.internal, options.host ?? '127.0.0.1') : null,
    adapters: options.adapters,
  }
}

/** The embedded adapters, under ./data like `npm start`'s; no metadata database, no webhooks. */
function embeddedBackends(): Backends {
  return {
    registry: { kind: 'memory', leaseMs: DEFAULT_TIMINGS.registryLeaseMs },
    snapshots: { kind: 'file', folder: resolve('data/snapshots') },
    journal: { kind: 'file', folder: resolve('data/journal') },
    metadata: { kind: 'none' },
    events: { kind: 'none' },
  }
}

async function resolveInternal(
  internal: InternalEndpointOptions,
  host: string,
): Promise<ResolvedServerOptions['internal']> {
  // Bound to one address, the endpoint is reachable there only: peers must be told that one.
  const boundTo = boundAddress(host)
  return {
    port: internal.port,
    token: internal.token,
    advertisedHost: await discoverInternalHost(internal.advertisedHost ?? boundTo, internal.taskMetadataUrl),
  }
}

/** `{ port: undefined }` means "the default", as an omitted `port` does, not "no port". */
function withoutUnset<T extends object>(options: T): T {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as T
}
