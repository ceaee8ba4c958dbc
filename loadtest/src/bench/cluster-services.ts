import { readFileSync } from 'node:fs'
import { startPostgres, startRedis } from '../../../scripts/lib/services.mjs'
import { pin, type StartedServer, type StartOptions, startSymphony } from './servers.js'

/**
 * Our server with a cluster's adapters: Redis for pub/sub and the journal, a real Postgres for
 * metadata (snapshots stay on files: S3 has no local stand-in fast enough to be fair). Redis and
 * Postgres are pinned to the server's CPUs, so what they cost the machine shows in its latency;
 * their CPU is reported as the helpers'.
 */
export async function startSymphonyCluster(options: StartOptions): Promise<StartedServer> {
  const redis = await startRedis()
  const postgres = await startPostgres().catch(async (error) => {
    await redis.stop()
    throw error
  })
  const stopServices = () => Promise.all([redis.stop(), postgres.stop()])
  if (options.cpus) pin(redis.pid, options.cpus)
  // Connections' backends are forked from the postmaster later and inherit its CPUs.
  if (options.cpus) for (const pid of withChildren(postgres.pid)) pin(pid, options.cpus)
  try {
    const server = await startSymphony({
      ...options,
      env: { ...options.env, PUBSUB: redis.url, JOURNAL: redis.url, DATABASE_URL: postgres.url },
    })
    return {
      ...server,
      name: 'symphony (cluster adapters)',
      // Read when asked: by then the server's connections have their backends.
      get helperPids() {
        return [redis.pid, ...withChildren(postgres.pid)]
      },
      async stop() {
        await server.stop()
        await stopServices()
      },
    }
  } catch (error) {
    await stopServices()
    throw error
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
