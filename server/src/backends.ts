// Each port's backends: one `kind` per adapter Symphony can choose from the configuration, with the
// settings it is built with. parseConfig reads them from the URL variables; adapters/select-<port>.ts
// opens the adapter a `kind` names.

import type { RedisLinkSettings } from './adapters/redis-connection.js'

/** The AWS clients' HTTP settings unless configured (`AWS_MAX_SOCKETS`, `AWS_*_TIMEOUT_MS`). */
export const DEFAULT_AWS_HTTP = {
  maxSockets: 128,
  connectTimeoutMs: 3_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 10_000,
} as const

/** Where the AWS adapters connect; credentials come from the SDK's default chain. */
export interface AwsClientOptions {
  region: string
  /** An emulator's URL (tests, local runs); unset for AWS itself. */
  endpoint?: string | undefined
  /** Per-service overrides of `endpoint` (AWS's own AWS_ENDPOINT_URL_<SERVICE> convention). */
  s3Endpoint?: string | undefined
  dynamoEndpoint?: string | undefined
  /** Sockets per host each client opens at once (`AWS_MAX_SOCKETS`); more requests queue. */
  maxSockets?: number | undefined
  /** The longest a TCP connection to AWS may take to open (`AWS_CONNECT_TIMEOUT_MS`). */
  connectTimeoutMs?: number | undefined
  /** The longest one request may take, queueing included, before it fails and is retried (`AWS_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs?: number | undefined
  /**
   * The longest a request's socket may stay silent, either way, before the call fails and is
   * retried (`AWS_IDLE_TIMEOUT_MS`): a request lost on the way never answers at all.
   */
  idleTimeoutMs?: number | undefined
}

/**
 * A Redis connection's URL and link settings (`REDIS_*`: command timeout, keepalive, heartbeats),
 * each unset one `DEFAULT_REDIS_LINK`'s.
 */
export interface RedisBackend {
  kind: 'redis'
  url: string
  link?: Partial<RedisLinkSettings>
}
/** `REGISTRY`; a lease is refreshed while held and ignored once `leaseMs` old (`REGISTRY_LEASE_MS`). */
export type RegistryConfig =
  | { kind: 'memory'; leaseMs: number }
  | { kind: 'dynamodb'; table: string; leaseMs: number; aws: AwsClientOptions }
/** `SNAPSHOTS`; `memory` (lost at exit) only for servers built in code, such as tests. */
export type SnapshotsConfig =
  | { kind: 'memory' }
  /** `versions`: saved versions kept per room, the current one included (`SNAPSHOT_FILE_VERSIONS`). */
  | { kind: 'file'; folder: string; versions?: number }
  | { kind: 's3'; bucket: string; prefix: string; aws: AwsClientOptions }
/** `JOURNAL`, by default the cluster's Redis (`PUBSUB`); `memory` (lost at exit) only for servers built in code. */
export type JournalConfig =
  | { kind: 'memory' }
  | { kind: 'file'; folder: string }
  /** `cluster`: a Redis Cluster (MemoryDB, ElastiCache cluster mode), reached through a cluster client. */
  | (RedisBackend & { cluster?: boolean })
/** A real Postgres, or PGlite in a child process served on a loopback port. */
export type DatabaseConfig =
  | { kind: 'postgres'; url: string }
  | { kind: 'pglite'; folder: string; port: number }
/** `DATABASE_URL`; rows older than `retentionDays` are pruned (`METADATA_RETENTION_DAYS`). */
export type MetadataConfig = { kind: 'none' } | (DatabaseConfig & { retentionDays: number })
/** `WEBHOOK_URL`, `WEBHOOK_SECRET`, `WEBHOOK_DEBOUNCE_MS`. */
export type EventsConfig =
  | { kind: 'none' }
  | { kind: 'webhook'; url: string; secret: string; debounceMs: number }

/** The backend of every port. */
export interface Backends {
  registry: RegistryConfig
  snapshots: SnapshotsConfig
  journal: JournalConfig
  metadata: MetadataConfig
  events: EventsConfig
}
