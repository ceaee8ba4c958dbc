import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import type { AwsClientOptions } from './adapters/aws-clients.js'
import type { DatabaseConfig } from './adapters/postgres/connect.js'
import type { AuthConfig } from './auth/authenticator.js'
import { ConfigError } from './errors.js'
import type { LogLevel } from './logger.js'
import { withUrlPassword } from './url-password.js'

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
  REGISTRY: z
    .string()
    .default('memory')
    .refine(
      (v) => v === 'memory' || /^dynamodb:\/\/[A-Za-z0-9_.-]{3,255}$/.test(v),
      'must be "memory" or dynamodb://<table>',
    ),
  SNAPSHOTS: SNAPSHOTS_URL,
  JOURNAL: optionalText.refine(
    (v) => !v || /^file:\/\/./.test(v) || /^rediss?:\/\/./.test(v),
    'must be file://<folder> or redis://host:port',
  ),
  DATABASE_URL: z
    .string()
    .default('pglite://./data/pg')
    .refine(
      (v) => v === 'none' || /^pglite:\/\/./.test(v) || /^postgres(ql)?:\/\/./.test(v),
      'must be postgres://…, pglite://<folder> or none',
    ),
  DATABASE_PASSWORD: optionalText,
  PGLITE_PORT: int(0, 65535, 5433),
  METADATA_SAMPLE_INTERVAL_MS: int(0, 3_600_000, 10_000),
  METADATA_RETENTION_DAYS: int(1, 3650, 30),
  AWS_REGION: z.string().default('us-east-1'),
  AWS_ENDPOINT_URL: optionalUrl,
  AWS_ENDPOINT_URL_S3: optionalUrl,
  AWS_ENDPOINT_URL_DYNAMODB: optionalUrl,
  INTERNAL_PORT: int(0, 65535, 9234),
  INTERNAL_HOST: optionalText,
  INTERNAL_TOKEN: optionalText.refine((s) => !s || s.length >= 16, 'must be at least 16 characters'),
  REGISTRY_LEASE_MS: int(1_000, 3_600_000, 30_000),
  PEER_FETCH_TIMEOUT_MS: int(50, 60_000, 2_000),
  ANTI_ENTROPY_INTERVAL_MS: int(0, 3_600_000, 10_000),
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
  SNAPSHOT_INTERVAL_MS: int(100, 3_600_000, 30_000),
  ROOM_GRACE_MS: int(0, 3_600_000, 5_000),
  SHUTDOWN_TIMEOUT_MS: int(1_000, 600_000, 25_000),
  PING_INTERVAL_MS: int(100, 600_000, 30_000),
  MAX_MESSAGE_BYTES: int(1024, 1024 * MiB, 16 * MiB),
  MAX_DOCUMENT_BYTES: int(1024, 4096 * MiB, 64 * MiB),
  MAX_PENDING_BYTES: int(0, 1024 * MiB, MiB),
  MAX_PENDING_DELETE_BYTES: int(0, 64 * MiB, 32 * 1024),
  MAX_PRESENCE_BYTES: int(64, 16 * MiB, 16 * 1024),
  MAX_BUFFERED_BYTES: int(1024, 4096 * MiB, 32 * MiB),
  MAX_CONNECTIONS: int(1, 1_000_000, 20_000),
  MAX_CONNECTIONS_PER_ROOM: int(1, 1_000_000, 2_000),
  MAX_MESSAGES_PER_SECOND: int(1, 1_000_000, 200),
  MESSAGE_BURST: int(1, 1_000_000, 400),
})

export interface Limits {
  maxMessageBytes: number
  maxDocumentBytes: number
  /** Bytes of updates a room may hold waiting for updates it never received. */
  maxPendingBytes: number
  /** Bytes of deletions of items a room does not have yet (re-read on every update). */
  maxPendingDeleteBytes: number
  /** Largest presence state (JSON bytes) one client may set. */
  maxPresenceBytes: number
  maxBufferedBytes: number
  maxConnections: number
  maxConnectionsPerRoom: number
  messagesPerSecond: number
  messageBurst: number
  pingIntervalMs: number
}

export type PubSubConfig = { kind: 'memory' } | { kind: 'redis'; url: string }
export type RegistryConfig = { kind: 'memory' } | { kind: 'dynamodb'; table: string }
export type JournalConfig = { kind: 'file'; folder: string } | { kind: 'redis'; url: string }
export type SnapshotsConfig =
  | { kind: 'file'; folder: string }
  | { kind: 's3'; bucket: string; prefix: string }

/** The port other servers fetch room state from, or null in single-server (memory registry) mode. */
export interface InternalEndpointConfig {
  port: number
  /** Host peers reach this server at; discovered at start-up when not set. */
  host: string | undefined
  token: string
}

export interface Config {
  port: number
  host: string
  serverId: string
  logLevel: LogLevel
  /** The source commit (`SYMPHONY_COMMIT`, else `GIT_COMMIT`), or "unknown". */
  commit: string
  pubsub: PubSubConfig
  registry: RegistryConfig
  snapshots: SnapshotsConfig
  journal: JournalConfig
  database: DatabaseConfig
  /** How often each loaded room's connections and size are recorded (0: never). */
  metadataSampleIntervalMs: number
  /** Samples and closed sessions older than this many days are pruned (hourly). */
  metadataRetentionDays: number
  aws: AwsClientOptions
  internal: InternalEndpointConfig | null
  registryLeaseMs: number
  peerFetchTimeoutMs: number
  antiEntropyIntervalMs: number
  auth: AuthConfig
  /** Development only: the secret `GET /dev/token` signs with, or null (the route is off). */
  devTokenSecret: string | null
  /** The REST API's bearer secret, or null (the API is off). */
  apiSecret: string | null
  /** Where room events go, or null (no webhooks). */
  webhook: { url: string; secret: string; debounceMs: number } | null
  /** Browser origins allowed to connect; empty: any. */
  allowedOrigins: string[]
  snapshotIntervalMs: number
  roomGraceMs: number
  shutdownTimeoutMs: number
  limits: Limits
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
  return {
    port: e.PORT,
    host: e.HOST,
    serverId: e.SERVER_ID,
    logLevel: e.LOG_LEVEL,
    commit: e.SYMPHONY_COMMIT ?? e.GIT_COMMIT ?? 'unknown',
    pubsub:
      e.PUBSUB === 'memory'
        ? { kind: 'memory' }
        : { kind: 'redis', url: withUrlPassword(e.PUBSUB, e.PUBSUB_PASSWORD) },
    registry:
      e.REGISTRY === 'memory' ? { kind: 'memory' } : { kind: 'dynamodb', table: e.REGISTRY.slice(11) },
    snapshots: snapshotsFrom(e.SNAPSHOTS),
    journal: journalFrom(e),
    database: databaseFrom(e.DATABASE_URL, e.DATABASE_PASSWORD, e.PGLITE_PORT),
    metadataSampleIntervalMs: e.METADATA_SAMPLE_INTERVAL_MS,
    metadataRetentionDays: e.METADATA_RETENTION_DAYS,
    aws: {
      region: e.AWS_REGION,
      endpoint: e.AWS_ENDPOINT_URL,
      s3Endpoint: e.AWS_ENDPOINT_URL_S3,
      dynamoEndpoint: e.AWS_ENDPOINT_URL_DYNAMODB,
    },
    internal: internalFrom(e),
    registryLeaseMs: e.REGISTRY_LEASE_MS,
    peerFetchTimeoutMs: e.PEER_FETCH_TIMEOUT_MS,
    antiEntropyIntervalMs: e.ANTI_ENTROPY_INTERVAL_MS,
    auth: authFrom(e),
    devTokenSecret: devTokenSecretFrom(e),
    apiSecret: e.API_SECRET ?? null,
    webhook: webhookFrom(e),
    allowedOrigins: e.ALLOWED_ORIGINS,
    snapshotIntervalMs: e.SNAPSHOT_INTERVAL_MS,
    roomGraceMs: e.ROOM_GRACE_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      maxDocumentBytes: e.MAX_DOCUMENT_BYTES,
      maxPendingBytes: e.MAX_PENDING_BYTES,
      maxPendingDeleteBytes: e.MAX_PENDING_DELETE_BYTES,
      maxPresenceBytes: e.MAX_PRESENCE_BYTES,
      maxBufferedBytes: e.MAX_BUFFERED_BYTES,
      maxConnections: e.MAX_CONNECTIONS,
      maxConnectionsPerRoom: e.MAX_CONNECTIONS_PER_ROOM,
      messagesPerSecond: e.MAX_MESSAGES_PER_SECOND,
      messageBurst: e.MESSAGE_BURST,
      pingIntervalMs: e.PING_INTERVAL_MS,
    },
  }
}

/** `file://./data` is relative to the working directory, `file:///srv/data` absolute; `s3://bucket/prefix/`. */
export function snapshotsFrom(url: string): SnapshotsConfig {
  if (url.startsWith('s3://')) {
    const [bucket = '', ...rest] = url.slice('s3://'.length).split('/')
    const prefix = rest.join('/')
    // `s3://bucket/rooms` means the folder rooms/, not keys that merely start with "rooms".
    return { kind: 's3', bucket, prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix }
  }
  return { kind: 'file', folder: folderOf(url) }
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
function journalFrom(e: z.infer<typeof environment>): JournalConfig {
  const url = e.JOURNAL ?? (e.PUBSUB === 'memory' ? 'file://./data/journal' : e.PUBSUB)
  if (/^rediss?:\/\//.test(url)) {
    return { kind: 'redis', url: e.JOURNAL ? url : withUrlPassword(url, e.PUBSUB_PASSWORD) }
  }
  // (Without an explicit JOURNAL, internalFrom refuses a shared REGISTRY over memory pub/sub.)
  if (e.REGISTRY !== 'memory' && e.JOURNAL) {
    throw new ConfigError('JOURNAL: a shared REGISTRY needs a shared journal (redis://…), not local files')
  }
  return { kind: 'file', folder: folderOf(url) }
}

/** `pglite://./data/pg` is a folder relative to the working directory, like `file://`. */
function databaseFrom(url: string, password: string | undefined, pglitePort: number): DatabaseConfig {
  if (url === 'none') return { kind: 'none' }
  if (!url.startsWith('pglite://')) return { kind: 'postgres', url: withUrlPassword(url, password) }
  const rest = url.slice('pglite://'.length)
  return { kind: 'pglite', folder: resolve(rest), port: pglitePort }
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
  return { port: e.INTERNAL_PORT, host: e.INTERNAL_HOST, token: e.INTERNAL_TOKEN }
}

function webhookFrom(e: z.infer<typeof environment>): Config['webhook'] {
  if (!e.WEBHOOK_URL) {
    if (e.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_SECRET: set WEBHOOK_URL too, or unset it')
    return null
  }
  if (!e.WEBHOOK_SECRET) throw new ConfigError('WEBHOOK_URL: needs WEBHOOK_SECRET (whsec_…) to sign with')
  return { url: e.WEBHOOK_URL, secret: e.WEBHOOK_SECRET, debounceMs: e.WEBHOOK_DEBOUNCE_MS }
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
