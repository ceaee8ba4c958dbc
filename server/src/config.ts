import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import type { AuthConfig } from './auth/authenticator.js'
import { ConfigError } from './errors.js'
import type { LogLevel } from './logger.js'

const MiB = 1024 * 1024

const int = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback)
const optionalText = z
  .string()
  .optional()
  .transform((value) => (value?.trim() ? value.trim() : undefined))

/** Every environment variable the sync server reads, with its default. The README lists them. */
const environment = z.object({
  PORT: int(0, 65535, 1234),
  HOST: z.string().default('0.0.0.0'),
  SERVER_ID: z.string().min(1).default(`${hostname()}-${process.pid}`),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  PUBSUB: z
    .literal('memory', { error: 'only "memory" is available until Redis support lands' })
    .default('memory'),
  REGISTRY: z
    .literal('memory', { error: 'only "memory" is available until DynamoDB support lands' })
    .default('memory'),
  SNAPSHOTS: z
    .string()
    .default('file://./data/snapshots')
    .refine((url) => url.startsWith('file://'), 'must be file://<folder> (S3 support has not landed yet)'),
  AUTH: z.enum(['none', 'jwt']).optional(),
  AUTH_SECRET: optionalText.refine((s) => !s || s.length >= 32, 'must be at least 32 characters'),
  AUTH_PUBLIC_KEY: optionalText,
  AUTH_JWKS_URL: optionalText.refine((url) => !url || URL.canParse(url), 'must be a URL'),
  AUTH_ISSUER: optionalText,
  AUTH_AUDIENCE: optionalText,
  SNAPSHOT_INTERVAL_MS: int(100, 3_600_000, 30_000),
  ROOM_GRACE_MS: int(0, 3_600_000, 5_000),
  SHUTDOWN_TIMEOUT_MS: int(1_000, 600_000, 25_000),
  PING_INTERVAL_MS: int(100, 600_000, 30_000),
  MAX_MESSAGE_BYTES: int(1024, 1024 * MiB, 16 * MiB),
  MAX_DOCUMENT_BYTES: int(1024, 4096 * MiB, 64 * MiB),
  MAX_BUFFERED_BYTES: int(1024, 4096 * MiB, 32 * MiB),
  MAX_CONNECTIONS: int(1, 1_000_000, 20_000),
  MAX_CONNECTIONS_PER_ROOM: int(1, 1_000_000, 2_000),
  MAX_MESSAGES_PER_SECOND: int(1, 1_000_000, 200),
  MESSAGE_BURST: int(1, 1_000_000, 400),
})

export interface Limits {
  maxMessageBytes: number
  maxDocumentBytes: number
  maxBufferedBytes: number
  maxConnections: number
  maxConnectionsPerRoom: number
  messagesPerSecond: number
  messageBurst: number
  pingIntervalMs: number
}

export interface Config {
  port: number
  host: string
  serverId: string
  logLevel: LogLevel
  pubsub: 'memory'
  registry: 'memory'
  snapshotFolder: string
  auth: AuthConfig
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
    pubsub: e.PUBSUB,
    registry: e.REGISTRY,
    snapshotFolder: folderOf(e.SNAPSHOTS),
    auth: authFrom(e),
    snapshotIntervalMs: e.SNAPSHOT_INTERVAL_MS,
    roomGraceMs: e.ROOM_GRACE_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      maxDocumentBytes: e.MAX_DOCUMENT_BYTES,
      maxBufferedBytes: e.MAX_BUFFERED_BYTES,
      maxConnections: e.MAX_CONNECTIONS,
      maxConnectionsPerRoom: e.MAX_CONNECTIONS_PER_ROOM,
      messagesPerSecond: e.MAX_MESSAGES_PER_SECOND,
      messageBurst: e.MESSAGE_BURST,
      pingIntervalMs: e.PING_INTERVAL_MS,
    },
  }
}

/** `file://./data` is relative to the working directory; `file:///srv/data` is absolute. */
function folderOf(url: string): string {
  const rest = url.slice('file://'.length)
  return rest.startsWith('/') ? fileURLToPath(url) : resolve(rest)
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
