import { Cluster, Redis, type RedisOptions } from 'ioredis'

/** A connection to one Redis, or a cluster client (MemoryDB, ElastiCache in cluster mode). */
export type RedisConnection = Redis | Cluster

/** How every Redis connection of the server guards its link (`REDIS_*` in docs/configuration.md). */
export interface RedisLinkSettings {
  /** A command unanswered this long fails, queued ones included (`Command timed out`). */
  commandTimeoutMs: number
  /** A TCP connection not established this long is abandoned and retried. */
  connectTimeoutMs: number
  /** Idle time before TCP keepalive probes start on a quiet connection. */
  keepAliveMs: number
  /** The longest wait between reconnection attempts (the backoff grows to it, jittered). */
  retryMaxDelayMs: number
  /** How often each connection proves it works (a PING). */
  heartbeatIntervalMs: number
  /** A proof not done within this is a missed heartbeat: the link is down and reopened. */
  heartbeatTimeoutMs: number
}

export const DEFAULT_REDIS_LINK: RedisLinkSettings = {
  commandTimeoutMs: 5_000,
  connectTimeoutMs: 5_000,
  keepAliveMs: 10_000,
  retryMaxDelayMs: 2_000,
  heartbeatIntervalMs: 2_000,
  heartbeatTimeoutMs: 3_000,
}

export interface RedisConnectionOptions {
  /** Shown by CLIENT LIST: `<serverId>:journal`. */
  name: string
  settings: RedisLinkSettings
  /** `url` names a Redis Cluster's configuration endpoint: open a cluster client. */
  cluster?: boolean
}

/**
 * Opens a Redis connection with the server's link settings: the one place any is created. A
 * cluster client gives each node's connection the same settings.
 */
export function openRedisConnection(url: string, options: RedisConnectionOptions): RedisConnection {
  const { settings } = options
  const link = {
    connectionName: options.name,
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: settings.connectTimeoutMs,
    keepAlive: settings.keepAliveMs,
    // The command timeout is the one deadline: no second one counted in reconnection attempts.
    maxRetriesPerRequest: null,
  } satisfies RedisOptions
  const retry = (attempt: number) => retryDelay(attempt, settings.retryMaxDelayMs)
  if (options.cluster) return openCluster(url, link, retry)
  return new Redis(url, {
    ...link,
    retryStrategy: retry,
    autoResubscribe: false,
    lazyConnect: false,
  })
}

/**
 * A cluster client for the Redis Cluster whose configuration endpoint `url` names. The client
 * learns the nodes from it and follows a failover to the new primary; the URL's user, password
 * and TLS (`rediss://`) apply to every node it learns.
 */
function openCluster(url: string, link: RedisOptions, retry: (attempt: number) => number): Cluster {
  const parsed = new URL(url)
  return new Cluster([{ host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 6379) }], {
    // Over TLS the nodes announce host names their certificates hold: resolving those to addresses
    // before connecting would fail the certificate check (ioredis's note on AWS clusters with TLS).
    dnsLookup: (address, callback) => callback(null, address),
    clusterRetryStrategy: retry,
    redisOptions: {
      ...link,
      username: decodeURIComponent(parsed.username) || undefined,
      password: decodeURIComponent(parsed.password) || undefined,
      tls: parsed.protocol === 'rediss:' ? {} : undefined,
    },
  })
}

/** Exponential from 50 ms up to `maxMs`, half of it random, so servers do not reconnect in step. */
function retryDelay(attempt: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, 50 * 2 ** Math.min(attempt, 16))
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2)
}

/**
 * QUIT waits for pending replies (so queued appends go out), but only on a live connection:
 * while ioredis is reconnecting it would queue QUIT behind them indefinitely, so disconnect then.
 */
export async function closeConnection(connection: RedisConnection): Promise<void> {
  if (connection.status === 'end') return
  if (connection.status !== 'ready') {
    connection.disconnect()
    return
  }
  try {
    await connection.quit()
  } catch {
    connection.disconnect()
  }
}
