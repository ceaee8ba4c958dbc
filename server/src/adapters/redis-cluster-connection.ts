import { Cluster } from 'ioredis'

/**
 * A cluster client for the Redis Cluster whose configuration endpoint `url` names (MemoryDB,
 * ElastiCache in cluster mode). The client learns the nodes from it and follows a failover to the
 * new primary; the URL's user, password and TLS (`rediss://`) apply to every node it learns.
 */
export function openClusterConnection(url: string, connectionName: string): Cluster {
  const parsed = new URL(url)
  return new Cluster([{ host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 6379) }], {
    // Over TLS the nodes announce host names their certificates hold: resolving those to addresses
    // before connecting would fail the certificate check (ioredis's note on AWS clusters with TLS).
    dnsLookup: (address, callback) => callback(null, address),
    redisOptions: {
      connectionName,
      username: decodeURIComponent(parsed.username) || undefined,
      password: decodeURIComponent(parsed.password) || undefined,
      tls: parsed.protocol === 'rediss:' ? {} : undefined,
    },
  })
}
