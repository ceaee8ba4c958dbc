import { readFileSync } from 'node:fs'
import { startPostgres, startRedis } from '@symphony/dev-scripts/services'
import type { Placement } from '../virtual-users/room-run.js'
import { pin, type StartedServer, type StartOptions, startSymphony } from './servers.js'

/**
 * Our server with a cluster's adapters: Redis for pub/sub and the journal, a real Postgres for
 * metadata (snapshots stay on files: S3 has no local stand-in fast enough to be fair). Redis and
 * Postgres are pinned to the server's CPUs, so what they cost the machine shows in its latency;
 * their CPU is reported as the helpers'.
 */
export async function startSymphonyCluster(options: StartOptions): Promise<StartedServer> {
  const services = await startClusterServices(options)
  try {
    const server = await startSymphony({ ...options, env: services.env })
    return {
      ...server,
      name: 'symphony (cluster adapters)',
      get helperPids() {
        return services.helperPids()
      },
      async stop() {
        await server.stop()
        await services.stop()
      },
    }
  } catch (error) {
    await services.stop()
    throw error
  }
}

/** Redis and Postgres for the servers, pinned to their CPUs; `env` points the servers at them. */
async function startClusterServices(options: StartOptions) {
  const redis = await startRedis()
  const postgres = await startPostgres().catch(async (error) => {
    await redis.stop()
    throw error
  })
  if (options.cpus) pin(redis.pid, options.cpus)
  // Connections' backends are forked from the postmaster later and inherit its CPUs.
  if (options.cpus) for (const pid of withChildren(postgres.pid)) pin(pid, options.cpus)
  return {
    env: { ...options.env, PUBSUB: redis.url, JOURNAL: redis.url, DATABASE_URL: postgres.url },
    // Read when asked: by then the servers' connections have their backends.
    helperPids: () => [redis.pid, ...withChildren(postgres.pid)],
    stop: () => Promise.all([redis.stop(), postgres.stop()]),
  }
}

/**
 * Three of our servers as a cluster runs them: Redis for pub/sub and the journal (one Redis, as
 * `npm run cluster` has), a real Postgres for metadata, the registry in memory (each server loads
 * a room from its own snapshots: moto, the only local DynamoDB, would cost more than the servers).
 * `placement` says how the generator places a room's users: all on one server, or over the three.
 */
export async function startSymphonyCluster3(
  options: StartOptions,
  placement: Placement,
): Promise<StartedServer> {
  const services = await startClusterServices(options)
  const { env } = services
  // The first migrates the metadata schema; the others find it done.
  const first = await Promise.allSettled([startSymphony({ ...options, env })])
  const others =
    first[0].status === 'fulfilled'
      ? [1, 2].map(() => startSymphony({ ...options, env, readyOnListening: true }))
      : []
  const started = [...first, ...(await Promise.allSettled(others))]
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
  const stopAll = async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await services.stop()
  }
  const failed = started.find((result) => result.status === 'rejected')
  if (failed) {
    await stopAll()
    throw failed.reason
  }
  const [one] = servers as [StartedServer]
  return {
    name: `symphony, 3 servers (${placement})`,
    url: one.url,
    urls: servers.map((server) => server.url),
    placement,
    pid: one.pid,
    pids: servers.map((server) => server.pid),
    get helperPids() {
      return services.helperPids()
    },
    stop: stopAll,
  }
}

function withChildren(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    return [pid, ...(children ? children.split(' ').map(Number) : [])]
  } catch {
    return [pid]
  }
}
