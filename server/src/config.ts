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
  AWS_IDLE_TIMEOUT_MS: int(100, 600_000, DEFAULT_AWS_HTTP.idleTimeoutMs),
  INTERNAL_PORT: int(0, 65535, 9234),
  INTERNAL_HOST: optionalText,
  INTERNAL_TOKEN: optionalText.refine((s) => !s || s.length >= 16, 'must be at least 16 characters'),
  /** Set by ECS: where the task's private IP is read from when INTERNAL_HOST is unset. */
  ECS_CONTAINER_METADATA_URI_V4: optionalUrl,
  REGISTRY_LEASE_MS: int(1_000, 3_600_000, DEFAULT_TIMINGS.registryLeaseMs),
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
  HOOK_TIMEOUT_MS: int(1, 600_000, DEFAULT_TIMINGS.hookTimeoutMs),
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

/** The environment variables as read and checked: what the `…From` helpers below build settings from. */
type Environment = z.infer<typeof environment>

/**
 * The environment, read: every server option under the name `createSyncServer` takes it by (so
 * `main` passes it through), plus the log level.
 */
export interface Config
  extends Required<Omit<SyncServerOptions, 'adapters' | 'hooks' | 'logger' | 'demoFolder' | 'internal'>> {
  logLevel: LogLevel
  limits: Limits
  snapshot: SnapshotPolicy
  backends: Backends
  internal: InternalEndpointOptions | null
}

/**
 * What start-up should warn of in a configuration it accepts: a Redis journal shared by servers
 * whose registry is in memory (each server would own every room its clients reach, and their
 * edits would never meet; one server alone is fine).
 */
export function configWarnings(config: Pick<Config, 'backends'>): string[] {
  const { journal, registry } = config.backends
  if (registry.kind !== 'memory' || journal.kind !== 'redis') return []
  return [
    'REGISTRY=memory with a Redis journal: run one server only. Servers that share Redis need a shared REGISTRY (dynamodb://…): each room has one owner, and with the in-memory registry every server would own every room its clients reach.',
  ]
}

/** Reads and checks the environment once, at start-up. Throws `ConfigError` with one clear line. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = environment.safeParse(env)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new ConfigError(`${issue?.path.join('.')}: ${issue?.message}`)
  }
  const vars = parsed.data
  if (vars.MESSAGE_BURST < vars.MAX_MESSAGES_PER_SECOND) {
    throw new ConfigError('MESSAGE_BURST: must be at least MAX_MESSAGES_PER_SECOND')
  }
  if (vars.ROOM_LOAD_RETRY_MAX_MS < vars.ROOM_LOAD_RETRY_MS) {
    throw new ConfigError('ROOM_LOAD_RETRY_MAX_MS: must be at least ROOM_LOAD_RETRY_MS')
  }
  const link = redisLinkFrom(vars)
  const aws: AwsClientOptions = {
    region: vars.AWS_REGION,
    endpoint: vars.AWS_ENDPOINT_URL,
    s3Endpoint: vars.AWS_ENDPOINT_URL_S3,
    dynamoEndpoint: vars.AWS_ENDPOINT_URL_DYNAMODB,
    maxSockets: vars.AWS_MAX_SOCKETS,
    connectTimeoutMs: vars.AWS_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: vars.AWS_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: vars.AWS_IDLE_TIMEOUT_MS,
  }
  return {
    port: vars.PORT,
    host: vars.HOST,
    serverId: vars.SERVER_ID,
    logLevel: vars.LOG_LEVEL,
    build: { version: SERVER_VERSION, commit: vars.SYMPHONY_COMMIT ?? vars.GIT_COMMIT ?? 'unknown' },
    backends: {
      registry:
        vars.REGISTRY === 'memory'
          ? { kind: 'memory', leaseMs: vars.REGISTRY_LEASE_MS }
          : { kind: 'dynamodb', table: vars.REGISTRY.slice(11), leaseMs: vars.REGISTRY_LEASE_MS, aws },
      snapshots: snapshotsFrom(vars.SNAPSHOTS, aws, vars.SNAPSHOT_FILE_VERSIONS),
      journal: journalFrom(vars, link),
      metadata: metadataFrom(vars),
      events: eventsFrom(vars),
    },
    metadataSampleIntervalMs: vars.METADATA_SAMPLE_INTERVAL_MS,
    internal: internalFrom(vars),
    auth: authFrom(vars),
    devTokenSecret: devTokenSecretFrom(vars),
    apiSecret: vars.API_SECRET ?? null,
    apiSaveWaitMs: vars.API_SAVE_WAIT_MS,
    apiMaxListLimit: vars.API_MAX_LIST_LIMIT,
    registryWaitMs: vars.REGISTRY_WAIT_MS,
    joinWaitMs: vars.JOIN_WAIT_MS,
    hookTimeoutMs: vars.HOOK_TIMEOUT_MS,
    roomLoadRetryMs: vars.ROOM_LOAD_RETRY_MS,
    roomLoadRetryMaxMs: vars.ROOM_LOAD_RETRY_MAX_MS,
    allowedOrigins: vars.ALLOWED_ORIGINS,
    snapshot: { ...DEFAULT_SNAPSHOT_POLICY, intervalMs: vars.SNAPSHOT_INTERVAL_MS },
    roomGraceMs: vars.ROOM_GRACE_MS,
    shutdownTimeoutMs: vars.SHUTDOWN_TIMEOUT_MS,
    limits: {
      maxMessageBytes: vars.MAX_MESSAGE_BYTES,
      maxDocumentBytes: vars.MAX_DOCUMENT_BYTES,
      maxDocumentStructs: vars.MAX_DOCUMENT_STRUCTS,
      maxPendingBytes: vars.MAX_PENDING_BYTES,
      maxPendingDeleteBytes: vars.MAX_PENDING_DELETE_BYTES,
      maxPresenceBytes: vars.MAX_PRESENCE_BYTES,
      maxBufferedBytes: vars.MAX_BUFFERED_BYTES,
      memoryBudgetBytes: vars.MEMORY_BUDGET_BYTES,
      maxConnections: vars.MAX_CONNECTIONS,
      maxConnectionsPerRoom: vars.MAX_CONNECTIONS_PER_ROOM,
      messagesPerSecond: vars.MAX_MESSAGES_PER_SECOND,
      messageBurst: vars.MESSAGE_BURST,
      pingIntervalMs: vars.PING_INTERVAL_MS,
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
 * The update journal lives in the cluster's Redis (`PUBSUB`) unless `JOURNAL` names its own, else
 * in local files. A cluster needs it shared, since the server that loads a crashed server's rooms
 * must read it.
 */
function journalFrom(vars: Environment, link: RedisLinkSettings): JournalConfig {
  if (vars.JOURNAL_PASSWORD && !vars.JOURNAL) {
    throw new ConfigError('JOURNAL_PASSWORD: needs JOURNAL (the journal beside PUBSUB uses PUBSUB_PASSWORD)')
  }
  const url = vars.JOURNAL ?? (vars.PUBSUB === 'memory' ? 'file://./data/journal' : vars.PUBSUB)
  if (/^rediss?:\/\//.test(url)) {
    const password = vars.JOURNAL ? vars.JOURNAL_PASSWORD : vars.PUBSUB_PASSWORD
    return { kind: 'redis', url: withUrlPassword(url, password), cluster: vars.JOURNAL_CLUSTER === '1', link }
  }
  if (vars.JOURNAL_CLUSTER === '1') {
    throw new ConfigError('JOURNAL_CLUSTER: needs a Redis journal (redis://… or rediss://…)')
  }
  if (vars.REGISTRY !== 'memory') {
    throw new ConfigError(
      vars.JOURNAL
        ? 'JOURNAL: a shared REGISTRY needs a shared journal (redis://…), not local files'
        : 'PUBSUB: a shared REGISTRY needs a shared journal: the cluster’s Redis (redis://…), or JOURNAL=redis://…',
    )
  }
  return { kind: 'file', folder: folderOf(url) }
}

/** The link settings of every Redis connection. */
function redisLinkFrom(vars: Environment): RedisLinkSettings {
  return {
    commandTimeoutMs: vars.REDIS_COMMAND_TIMEOUT_MS,
    connectTimeoutMs: vars.REDIS_CONNECT_TIMEOUT_MS,
    keepAliveMs: vars.REDIS_KEEPALIVE_MS,
    retryMaxDelayMs: vars.REDIS_RETRY_MAX_DELAY_MS,
    heartbeatIntervalMs: vars.REDIS_HEARTBEAT_INTERVAL_MS,
    heartbeatTimeoutMs: vars.REDIS_HEARTBEAT_TIMEOUT_MS,
  }
}

/** `pglite://./data/pg` is a folder relative to the working directory, like `file://`. */
function metadataFrom(vars: Environment): MetadataConfig {
  const url = vars.DATABASE_URL
  const retentionDays = vars.METADATA_RETENTION_DAYS
  if (url === 'none') return { kind: 'none' }
  if (!url.startsWith('pglite://')) {
    return { kind: 'postgres', url: withUrlPassword(url, vars.DATABASE_PASSWORD), retentionDays }
  }
  const rest = url.slice('pglite://'.length)
  return { kind: 'pglite', folder: resolve(rest), port: vars.PGLITE_PORT, retentionDays }
}

/**
 * Peers exist only with a shared registry; then the internal endpoint must be guarded. A single
 * server opens it too when INTERNAL_TOKEN is set, so the dashboard can read live rooms.
 */
function internalFrom(vars: Environment): InternalEndpointOptions | null {
  // A single server has no peers; it opens the endpoint only when given a token (for the dashboard).
  if (vars.REGISTRY === 'memory' && !vars.INTERNAL_TOKEN) return null
  if (vars.INTERNAL_PORT !== 0 && vars.INTERNAL_PORT === vars.PORT) {
    throw new ConfigError('INTERNAL_PORT: must differ from PORT')
  }
  if (!vars.INTERNAL_TOKEN) {
    throw new ConfigError(
      'INTERNAL_TOKEN: required with a shared REGISTRY (it guards the internal port: relay links, forwarded requests)',
    )
  }
  return {
    port: vars.INTERNAL_PORT,
    token: vars.INTERNAL_TOKEN,
    advertisedHost: vars.INTERNAL_HOST,
    taskMetadataUrl: vars.ECS_CONTAINER_METADATA_URI_V4,
  }
}

function eventsFrom(vars: Environment): EventsConfig {
  if (!vars.WEBHOOK_URL) {
    if (vars.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_SECRET: set WEBHOOK_URL too, or unset it')
    return { kind: 'none' }
  }
  if (!vars.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_URL: needs WEBHOOK_SECRET (whsec_…) to sign with')
  return {
    kind: 'webhook',
    url: vars.WEBHOOK_URL,
    secret: vars.WEBHOOK_SECRET,
    debounceMs: vars.WEBHOOK_DEBOUNCE_MS,
  }
}

function devTokenSecretFrom(vars: Environment): string | null {
  if (vars.DEV_TOKEN_ROUTE === '0') return null
  if (!vars.AUTH_SECRET) {
    throw new ConfigError(
      'DEV_TOKEN_ROUTE: needs AUTH_SECRET, which it signs with (and is for development only)',
    )
  }
  return vars.AUTH_SECRET
}

function authFrom(vars: Environment): AuthConfig {
  const keys = [
    vars.AUTH_SECRET && 'AUTH_SECRET',
    vars.AUTH_PUBLIC_KEY && 'AUTH_PUBLIC_KEY',
    vars.AUTH_JWKS_URL && 'AUTH_JWKS_URL',
  ]
  const given = keys.filter(Boolean)
  if (vars.AUTH === 'none') {
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
    secret: vars.AUTH_SECRET,
    publicKeyPem: vars.AUTH_PUBLIC_KEY?.replaceAll('\\n', '\n'),
    jwksUrl: vars.AUTH_JWKS_URL,
    issuer: vars.AUTH_ISSUER,
    audience: vars.AUTH_AUDIENCE,
  }
}
