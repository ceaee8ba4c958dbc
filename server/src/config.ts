import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { DEFAULT_REDIS_LINK, type RedisLinkSettings } from './adapters/redis-connection.js'
import { DEFAULT_SNAPSHOT_VERSIONS, MAX_SNAPSHOT_VERSIONS } from './adapters/snapshot-versions.js'
import type { AuthConfig } from './auth/authenticator.js'
import {
  type AwsClientOptions,
  type Backends,
  DEFAULT_AWS_HTTP,
  type EventsConfig,
  type JournalConfig,
  type MetadataConfig,
  type SnapshotsConfig,
} from './backends.js'
import type { SnapshotPolicy } from './core/snapshot-writer.js'
import { ConfigError } from './errors.js'
import type { LogLevel } from './logger.js'
import {
  DEFAULT_API_MAX_LIST_LIMIT,
  DEFAULT_LIMITS,
  DEFAULT_SNAPSHOT_POLICY,
  DEFAULT_TIMINGS,
  type InternalEndpointOptions,
  type Limits,
  type SyncServerOptions,
} from './server-options.js'
import { SERVER_VERSION } from './server-version.js'
import { withUrlPassword } from './url-password.js'

/** Where the core and transports have always read it; defined beside the other server options. */
export type { Limits } from './server-options.js'

const MiB = 1024 * 1024

const int = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback)
const optionalText = z
  .string()
  .optional()
  .transform((value) => (value?.trim() ? value.trim() : undefined))

/** `SNAPSHOTS`: where rooms are saved; the dashboard reads the same variable. */
export const SNAPSHOTS_URL = z
  .string()
  .default('file://./data/snapshots')
  .refine(
    (v) => /^file:\/\/./.test(v) || /^s3:\/\/[a-z0-9.-]{3,63}(\/.*)?$/.test(v),
    'must be file://<folder> or s3://<bucket>/<prefix>',
  )

const optionalUrl = optionalText.refine((url) => !url || URL.canParse(url), 'must be a URL')

/** `scheme://host[:port]` exactly as a browser sends it in `Origin`. */
function isOrigin(text: string): boolean {
  return URL.canParse(text) && new URL(text).origin === text
}

/** Every environment variable the sync server reads, with its default. docs/configuration.md lists them. */
const environment = z.object({
  PORT: int(0, 65535, 1234),
  HOST: z.string().default('0.0.0.0'),
  SERVER_ID: z.string().min(1).default(`${hostname()}-${process.pid}`),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  PUBSUB: z
    .string()
    .default('memory')
    .refine((v) => v === 'memory' || /^rediss?:\/\/./.test(v), 'must be "memory" or redis://host:port'),
  PUBSUB_PASSWORD: optionalText,
  REDIS_COMMAND_TIMEOUT_MS: int(100, 600_000, DEFAULT_REDIS_LINK.commandTimeoutMs),
  REDIS_CONNECT_TIMEOUT_MS: int(100, 600_000, DEFAULT_REDIS_LINK.connectTimeoutMs),
  REDIS_KEEPALIVE_MS: int(1_000, 3_600_000, DEFAULT_REDIS_LINK.keepAliveMs),
  REDIS_RETRY_MAX_DELAY_MS: int(50, 60_000, DEFAULT_REDIS_LINK.retryMaxDelayMs),
  REDIS_HEARTBEAT_INTERVAL_MS: int(100, 600_000, DEFAULT_REDIS_LINK.heartbeatIntervalMs),
  REDIS_HEARTBEAT_TIMEOUT_MS: int(100, 600_000, DEFAULT_REDIS_LINK.heartbeatTimeoutMs),
  REGISTRY: z
    .string()
    .default('memory')
    .refine(
      (v) => v === 'memory' || /^dynamodb:\/\/[A-Za-z0-9_.-]{3,255}$/.test(v),
      'must be "memory" or dynamodb://<table>',
    ),
  // A new backend for a port: its URL rule here and where parseConfig reads it, its `kind` in that
  // port's type in backends.ts, then its case in adapters/select-<port>.ts beside its adapter.
  SNAPSHOTS: SNAPSHOTS_URL,
  JOURNAL: optionalText.refine(
    (v) => !v || /^file:\/\/./.test(v) || /^rediss?:\/\/./.test(v),
    'must be file://<folder> or redis://host:port',
  ),
  JOURNAL_PASSWORD: optionalText,
  JOURNAL_CLUSTER: z.enum(['0', '1']).default('0'),
  DATABASE_URL: z
    .string()
    .default('pglite://./data/pg')
    .refine(
      (v) => v === 'none' || /^pglite:\/\/./.test(v) || /^postgres(ql)?:\/\/./.test(v),
      'must be postgres://…, pglite://<folder> or none',
    ),
  DATABASE_PASSWORD: optionalText,
  PGLITE_PORT: int(0, 65535, 5433),
  METADATA_SAMPLE_INTERVAL_MS: int(0, 3_600_000, DEFAULT_TIMINGS.metadataSampleIntervalMs),
  METADATA_RETENTION_DAYS: int(1, 3650, 30),
  AWS_REGION: z.string().default('us-east-1'),
  AWS_ENDPOINT_URL: optionalUrl,
  AWS_ENDPOINT_URL_S3: optionalUrl,
  AWS_ENDPOINT_URL_DYNAMODB: optionalUrl,
  AWS_MAX_SOCKETS: int(1, 10_000, DEFAULT_AWS_HTTP.maxSockets),
  AWS_CONNECT_TIMEOUT_MS: int(100, 600_000, DEFAULT_AWS_HTTP.connectTimeoutMs),
  AWS_REQUEST_TIMEOUT_MS: int(100, 3_600_000, DEFAULT_AWS_HTTP.requestTimeoutMs),
  INTERNAL_PORT: int(0, 65535, 9234),
  INTERNAL_HOST: optionalText,
  INTERNAL_TOKEN: optionalText.refine((s) => !s || s.length >= 16, 'must be at least 16 characters'),
  /** Set by ECS: where the task's private IP is read from when INTERNAL_HOST is unset. */
  ECS_CONTAINER_METADATA_URI_V4: optionalUrl,
  REGISTRY_LEASE_MS: int(1_000, 3_600_000, DEFAULT_TIMINGS.registryLeaseMs),
  PEER_FETCH_TIMEOUT_MS: int(50, 60_000, DEFAULT_TIMINGS.peerFetchTimeoutMs),
  ANTI_ENTROPY_INTERVAL_MS: int(0, 3_600_000, DEFAULT_TIMINGS.antiEntropyIntervalMs),
  ALLOWED_ORIGINS: optionalText
    .transform((v) => v?.split(',').map((origin) => origin.trim()) ?? [])
    .refine(
      (origins) => origins.every(isOrigin),
      'must be comma-separated origins such as https://app.example.com',
    ),
  AUTH: z.enum(['none', 'jwt']).optional(),
  AUTH_SECRET: optionalText.refine((s) => !s || s.length >= 32, 'must be at least 32 characters'),
  AUTH_PUBLIC_KEY: optionalText,
  AUTH_JWKS_URL: optionalUrl,
  AUTH_ISSUER: optionalText,
  AUTH_AUDIENCE: optionalText,
  DEV_TOKEN_ROUTE: z.enum(['0', '1']).default('0'),
  WEBHOOK_URL: optionalUrl,
  WEBHOOK_SECRET: optionalText.refine(
    (s) => !s || /^whsec_[A-Za-z0-9+/]{22,}={0,2}$/.test(s),
    'must be whsec_ and base64 (at least 16 bytes)',
  ),
  WEBHOOK_DEBOUNCE_MS: int(0, 3_600_000, 5_000),
  /** The source commit the image was built from, for `symphony_build_info` (GIT_COMMIT also works). */
  SYMPHONY_COMMIT: optionalText.refine((s) => !s || /^[\w.+-]{1,64}$/.test(s), 'must be a commit id'),
  GIT_COMMIT: optionalText.refine((s) => !s || /^[\w.+-]{1,64}$/.test(s), 'must be a commit id'),
  API_SECRET: optionalText.refine((s) => !s || s.length >= 32, 'must be at least 32 characters'),
  SNAPSHOT_INTERVAL_MS: int(100, 3_600_000, DEFAULT_SNAPSHOT_POLICY.intervalMs),
  SNAPSHOT_FILE_VERSIONS: int(1, MAX_SNAPSHOT_VERSIONS, DEFAULT_SNAPSHOT_VERSIONS),
  ROOM_GRACE_MS: int(0, 3_600_000, DEFAULT_TIMINGS.roomGraceMs),
  SHUTDOWN_TIMEOUT_MS: int(1_000, 600_000, DEFAULT_TIMINGS.shutdownTimeoutMs),
  API_SAVE_WAIT_MS: int(100, 600_000, DEFAULT_TIMINGS.apiSaveWaitMs),
  API_MAX_LIST_LIMIT: int(1, 100_000, DEFAULT_API_MAX_LIST_LIMIT),
  REGISTRY_WAIT_MS: int(50, 600_000, DEFAULT_TIMINGS.registryWaitMs),
  JOIN_WAIT_MS: int(100, 3_600_000, DEFAULT_TIMINGS.joinWaitMs),
  ROOM_LOAD_RETRY_MS: int(10, 600_000, DEFAULT_TIMINGS.roomLoadRetryMs),
  ROOM_LOAD_RETRY_MAX_MS: int(10, 3_600_000, DEFAULT_TIMINGS.roomLoadRetryMaxMs),
  PING_INTERVAL_MS: int(100, 600_000, DEFAULT_LIMITS.pingIntervalMs),
  MAX_MESSAGE_BYTES: int(1024, 1024 * MiB, DEFAULT_LIMITS.maxMessageBytes),
  MAX_DOCUMENT_BYTES: int(1024, 4096 * MiB, DEFAULT_LIMITS.maxDocumentBytes),
  MAX_DOCUMENT_STRUCTS: int(1_000, 1_000_000_000, DEFAULT_LIMITS.maxDocumentStructs),
  MAX_PENDING_BYTES: int(0, 1024 * MiB, DEFAULT_LIMITS.maxPendingBytes),
  MAX_PENDING_DELETE_BYTES: int(0, 64 * MiB, DEFAULT_LIMITS.maxPendingDeleteBytes),
  MAX_PRESENCE_BYTES: int(64, 16 * MiB, DEFAULT_LIMITS.maxPresenceBytes),
  MAX_BUFFERED_BYTES: int(1024, 4096 * MiB, DEFAULT_LIMITS.maxBufferedBytes),
  MEMORY_BUDGET_BYTES: int(MiB, 1024 * 1024 * MiB, DEFAULT_LIMITS.memoryBudgetBytes),
  MAX_CONNECTIONS: int(1, 1_000_000, DEFAULT_LIMITS.maxConnections),
  MAX_CONNECTIONS_PER_ROOM: int(1, 1_000_000, DEFAULT_LIMITS.maxConnectionsPerRoom),
  MAX_MESSAGES_PER_SECOND: int(1, 1_000_000, DEFAULT_LIMITS.messagesPerSecond),
  MESSAGE_BURST: int(1, 1_000_000, DEFAULT_LIMITS.messageBurst),
})

/** The port other servers fetch room state from (a host unset here is discovered at start-up). */
export type InternalEndpointConfig = InternalEndpointOptions & { fetchTimeoutMs: number }

/**
 * The environment, read: every server option under the name `createSyncServer` takes it by (so
 * `main` passes it through), plus the log level.
 */
export interface Config
  extends Required<Omit<SyncServerOptions, 'adapters' | 'logger' | 'demoFolder' | 'internal'>> {
  logLevel: LogLevel
  limits: Limits
  snapshot: SnapshotPolicy
  backends: Backends
  internal: InternalEndpointConfig | null
}

/** Reads and checks the environment once, at start-up. Throws `ConfigError` with one clear line. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = environment.safeParse(env)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new ConfigError(`${issue?.path.join('.')}: ${issue?.message}`)
  }
  const e = parsed.data
  if (e.MESSAGE_BURST < e.MAX_MESSAGES_PER_SECOND) {
    throw new ConfigError('MESSAGE_BURST: must be at least MAX_MESSAGES_PER_SECOND')
  }
  if (e.ROOM_LOAD_RETRY_MAX_MS < e.ROOM_LOAD_RETRY_MS) {
    throw new ConfigError('ROOM_LOAD_RETRY_MAX_MS: must be at least ROOM_LOAD_RETRY_MS')
  }
  const link = redisLinkFrom(e)
  const aws: AwsClientOptions = {
    region: e.AWS_REGION,
    endpoint: e.AWS_ENDPOINT_URL,
    s3Endpoint: e.AWS_ENDPOINT_URL_S3,
    dynamoEndpoint: e.AWS_ENDPOINT_URL_DYNAMODB,
    maxSockets: e.AWS_MAX_SOCKETS,
    connectTimeoutMs: e.AWS_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: e.AWS_REQUEST_TIMEOUT_MS,
  }
  return {
    port: e.PORT,
    host: e.HOST,
    serverId: e.SERVER_ID,
    logLevel: e.LOG_LEVEL,
    build: { version: SERVER_VERSION, commit: e.SYMPHONY_COMMIT ?? e.GIT_COMMIT ?? 'unknown' },
    backends: {
      pubsub:
        e.PUBSUB === 'memory'
          ? { kind: 'memory' }
          : { kind: 'redis', url: withUrlPassword(e.PUBSUB, e.PUBSUB_PASSWORD), link },
      registry:
        e.REGISTRY === 'memory'
          ? { kind: 'memory', leaseMs: e.REGISTRY_LEASE_MS }
          : { kind: 'dynamodb', table: e.REGISTRY.slice(11), leaseMs: e.REGISTRY_LEASE_MS, aws },
      snapshots: snapshotsFrom(e.SNAPSHOTS, aws, e.SNAPSHOT_FILE_VERSIONS),
      journal: journalFrom(e, link),
      metadata: metadataFrom(e),
      events: eventsFrom(e),
    },
    metadataSampleIntervalMs: e.METADATA_SAMPLE_INTERVAL_MS,
    internal: internalFrom(e),
    antiEntropyIntervalMs: e.ANTI_ENTROPY_INTERVAL_MS,
    auth: authFrom(e),
    devTokenSecret: devTokenSecretFrom(e),
    apiSecret: e.API_SECRET ?? null,
    apiSaveWaitMs: e.API_SAVE_WAIT_MS,
    apiMaxListLimit: e.API_MAX_LIST_LIMIT,
    registryWaitMs: e.REGISTRY_WAIT_MS,
    joinWaitMs: e.JOIN_WAIT_MS,
    roomLoadRetryMs: e.ROOM_LOAD_RETRY_MS,
    roomLoadRetryMaxMs: e.ROOM_LOAD_RETRY_MAX_MS,
    allowedOrigins: e.ALLOWED_ORIGINS,
    snapshot: { ...DEFAULT_SNAPSHOT_POLICY, intervalMs: e.SNAPSHOT_INTERVAL_MS },
    roomGraceMs: e.ROOM_GRACE_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      maxDocumentBytes: e.MAX_DOCUMENT_BYTES,
      maxDocumentStructs: e.MAX_DOCUMENT_STRUCTS,
      maxPendingBytes: e.MAX_PENDING_BYTES,
      maxPendingDeleteBytes: e.MAX_PENDING_DELETE_BYTES,
      maxPresenceBytes: e.MAX_PRESENCE_BYTES,
      maxBufferedBytes: e.MAX_BUFFERED_BYTES,
      memoryBudgetBytes: e.MEMORY_BUDGET_BYTES,
      maxConnections: e.MAX_CONNECTIONS,
      maxConnectionsPerRoom: e.MAX_CONNECTIONS_PER_ROOM,
      messagesPerSecond: e.MAX_MESSAGES_PER_SECOND,
      messageBurst: e.MESSAGE_BURST,
      pingIntervalMs: e.PING_INTERVAL_MS,
    },
  }
}

/**
 * A `SNAPSHOTS` URL (checked by `SNAPSHOTS_URL`) as the store's settings: `file://./data` is
 * relative to the working directory, `file:///srv/data` absolute; `s3://bucket/prefix/`.
 */
export function snapshotsFrom(
  url: string,
  aws: AwsClientOptions,
  fileVersions = DEFAULT_SNAPSHOT_VERSIONS,
): SnapshotsConfig {
  if (url.startsWith('s3://')) {
    const [bucket = '', ...rest] = url.slice('s3://'.length).split('/')
    const prefix = rest.join('/')
    // `s3://bucket/rooms` means the folder rooms/, not keys that merely start with "rooms".
    return { kind: 's3', bucket, prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix, aws }
  }
  return { kind: 'file', folder: folderOf(url), versions: fileVersions }
}

/** `file://./data` is relative to the working directory, `file:///srv/data` absolute. */
function folderOf(fileUrl: string): string {
  const rest = fileUrl.slice('file://'.length)
  return rest.startsWith('/') ? fileURLToPath(fileUrl) : resolve(rest)
}

/**
 * The update journal lives beside pub/sub: in Redis when pub/sub is, else in local files. A
 * cluster needs it shared, since the server that loads a crashed server's rooms must read it.
 */
function journalFrom(e: z.infer<typeof environment>, link: RedisLinkSettings): JournalConfig {
  if (e.JOURNAL_PASSWORD && !e.JOURNAL) {
    throw new ConfigError('JOURNAL_PASSWORD: needs JOURNAL (the journal beside PUBSUB uses PUBSUB_PASSWORD)')
  }
  const url = e.JOURNAL ?? (e.PUBSUB === 'memory' ? 'file://./data/journal' : e.PUBSUB)
  if (/^rediss?:\/\//.test(url)) {
    const password = e.JOURNAL ? e.JOURNAL_PASSWORD : e.PUBSUB_PASSWORD
    return { kind: 'redis', url: withUrlPassword(url, password), cluster: e.JOURNAL_CLUSTER === '1', link }
  }
  if (e.JOURNAL_CLUSTER === '1') {
    throw new ConfigError('JOURNAL_CLUSTER: needs a Redis journal (redis://… or rediss://…)')
  }
  // (Without an explicit JOURNAL, internalFrom refuses a shared REGISTRY over memory pub/sub.)
  if (e.REGISTRY !== 'memory' && e.JOURNAL) {
    throw new ConfigError('JOURNAL: a shared REGISTRY needs a shared journal (redis://…), not local files')
  }
  return { kind: 'file', folder: folderOf(url) }
}

/** The link settings of every Redis connection (pub/sub and journal alike). */
function redisLinkFrom(e: z.infer<typeof environment>): RedisLinkSettings {
  return {
    commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    connectTimeoutMs: e.REDIS_CONNECT_TIMEOUT_MS,
    keepAliveMs: e.REDIS_KEEPALIVE_MS,
    retryMaxDelayMs: e.REDIS_RETRY_MAX_DELAY_MS,
    heartbeatIntervalMs: e.REDIS_HEARTBEAT_INTERVAL_MS,
    heartbeatTimeoutMs: e.REDIS_HEARTBEAT_TIMEOUT_MS,
  }
}

/** `pglite://./data/pg` is a folder relative to the working directory, like `file://`. */
function metadataFrom(e: z.infer<typeof environment>): MetadataConfig {
  const url = e.DATABASE_URL
  const retentionDays = e.METADATA_RETENTION_DAYS
  if (url === 'none') return { kind: 'none' }
  if (!url.startsWith('pglite://')) {
    return { kind: 'postgres', url: withUrlPassword(url, e.DATABASE_PASSWORD), retentionDays }
  }
  const rest = url.slice('pglite://'.length)
  return { kind: 'pglite', folder: resolve(rest), port: e.PGLITE_PORT, retentionDays }
}

/**
 * Peers exist only with a shared registry; then the internal endpoint must be guarded. A single
 * server opens it too when INTERNAL_TOKEN is set, so the dashboard can read live rooms.
 */
function internalFrom(e: z.infer<typeof environment>): InternalEndpointConfig | null {
  // A single server has no peers; it opens the endpoint only when given a token (for the dashboard).
  if (e.REGISTRY === 'memory' && !e.INTERNAL_TOKEN) return null
  if (e.REGISTRY !== 'memory' && e.PUBSUB === 'memory') {
    throw new ConfigError(
      'PUBSUB: a shared REGISTRY needs shared pub/sub (redis://…), or servers never see each other’s edits',
    )
  }
  if (e.INTERNAL_PORT !== 0 && e.INTERNAL_PORT === e.PORT) {
    throw new ConfigError('INTERNAL_PORT: must differ from PORT')
  }
  if (!e.INTERNAL_TOKEN) {
    throw new ConfigError(
      'INTERNAL_TOKEN: required with a shared REGISTRY (it guards the peer state endpoint)',
    )
  }
  return {
    port: e.INTERNAL_PORT,
    token: e.INTERNAL_TOKEN,
    advertisedHost: e.INTERNAL_HOST,
    taskMetadataUrl: e.ECS_CONTAINER_METADATA_URI_V4,
    fetchTimeoutMs: e.PEER_FETCH_TIMEOUT_MS,
  }
}

function eventsFrom(e: z.infer<typeof environment>): EventsConfig {
  if (!e.WEBHOOK_URL) {
    if (e.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_SECRET: set WEBHOOK_URL too, or unset it')
    return { kind: 'none' }
  }
  if (!e.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_URL: needs WEBHOOK_SECRET (whsec_…) to sign with')
  return { kind: 'webhook', url: e.WEBHOOK_URL, secret: e.WEBHOOK_SECRET, debounceMs: e.WEBHOOK_DEBOUNCE_MS }
}

function devTokenSecretFrom(e: z.infer<typeof environment>): string | null {
  if (e.DEV_TOKEN_ROUTE === '0') return null
  if (!e.AUTH_SECRET) {
    throw new ConfigError(
      'DEV_TOKEN_ROUTE: needs AUTH_SECRET, which it signs with (and is for development only)',
    )
  }
  return e.AUTH_SECRET
}

function authFrom(e: z.infer<typeof environment>): AuthConfig {
  const keys = [
    e.AUTH_SECRET && 'AUTH_SECRET',
    e.AUTH_PUBLIC_KEY && 'AUTH_PUBLIC_KEY',
    e.AUTH_JWKS_URL && 'AUTH_JWKS_URL',
  ]
  const given = keys.filter(Boolean)
  if (e.AUTH === 'none') {
    if (given.length > 0) throw new ConfigError(`AUTH: "none" contradicts ${given.join(' and ')}; unset one`)
    return { mode: 'none' }
  }
  if (given.length === 0) {
    throw new ConfigError(
      'AUTH: set AUTH_SECRET, AUTH_PUBLIC_KEY or AUTH_JWKS_URL, or AUTH=none to run without auth',
    )
  }
  if (given.length > 1) throw new ConfigError(`AUTH: set only one of ${given.join(', ')}`)
  return {
    mode: 'jwt',
    secret: e.AUTH_SECRET,
    publicKeyPem: e.AUTH_PUBLIC_KEY?.replaceAll('\\n', '\n'),
    jwksUrl: e.AUTH_JWKS_URL,
    issuer: e.AUTH_ISSUER,
    audience: e.AUTH_AUDIENCE,
  }
}
