import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { startMoto, startPostgres, startRedis } from '@symphony/dev-scripts/services'
import type { Placement } from '../virtual-users/room-run.js'
import { pin, type StartedServer, type StartOptions, startSymphony } from './servers.js'

/**
 * Our server with a cluster's adapters: Redis for the journal, a real Postgres for
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

/**
 * Redis and Postgres for the servers, pinned to their CPUs; `env` points the servers at them. With
 * `registry`, moto's DynamoDB too, as the room registry they share (and their internal endpoint).
 */
async function startClusterServices(
  options: StartOptions,
  { registry = false, sharedSnapshots = false } = {},
) {
  const [redis, postgres, moto] = await startAll([
    startRedis(),
    startPostgres(),
    registry ? startMoto() : null,
  ])
  if (options.cpus) pin(redis.pid, options.cpus)
  // Connections' backends are forked from the postmaster later and inherit its CPUs.
  if (options.cpus) for (const pid of withChildren(postgres.pid)) pin(pid, options.cpus)
  const stop = () => Promise.all([redis.stop(), postgres.stop(), moto?.stop()])
  const shared = moto
    ? await sharedRegistry(moto.endpoint, { sharedSnapshots }).catch((error) =>
        stop().then(() => Promise.reject(error)),
      )
    : {}
  return {
    env: { ...options.env, PUBSUB: redis.url, JOURNAL: redis.url, DATABASE_URL: postgres.url, ...shared },
    // Read when asked: by then the servers' connections have their backends. Not moto: it stands
    // in for DynamoDB, a managed service that costs the servers' machines nothing (and a Python
    // emulator costs far more than the calls it answers).
    helperPids: () => [redis.pid, ...withChildren(postgres.pid)],
    stop,
  }
}

/** Every service started, or none left running. */
async function startAll<T extends readonly unknown[]>(
  starting: { [K in keyof T]: Promise<T[K]> | T[K] },
): Promise<T> {
  const results = await Promise.allSettled(starting)
  const failed = results.find((result) => result.status === 'rejected')
  if (!failed)
    return results.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T
  await Promise.all(
    results.map((result) =>
      result.status === 'fulfilled' ? (result.value as { stop(): Promise<unknown> } | null)?.stop() : null,
    ),
  )
  throw failed.reason
}

/**
 * The registry table made in moto at `endpoint`, and the servers' settings to share it; with
 * `sharedSnapshots`, a bucket there for their snapshots too.
 */
export async function sharedRegistry(
  endpoint: string,
  { sharedSnapshots = false } = {},
): Promise<Record<string, string>> {
  const table = 'symphony-bench-rooms'
  const bucket = 'symphony-bench-snapshots'
  const aws = {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  }
  // The built server's own helpers (as `npm run cluster` uses them): the harness has no AWS SDK.
  // Their credentials come from the environment, as the servers' do; moto takes any.
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const) process.env[name] ??= aws[name]
  const server = (await import('@symphony/server' as string)) as ServerAwsHelpers
  const clients = server.createAwsClients({ region: aws.AWS_REGION, endpoint })
  try {
    await server.createRegistryTable(clients.dynamo, table)
    if (sharedSnapshots) await server.createSnapshotBucket(clients.s3, bucket)
  } finally {
    clients.dynamo.destroy()
    clients.s3.destroy()
  }
  return {
    ...aws,
    REGISTRY: `dynamodb://${table}`,
    ...(sharedSnapshots ? { SNAPSHOTS: `s3://${bucket}/rooms/` } : {}),
    INTERNAL_PORT: '0',
    INTERNAL_HOST: '127.0.0.1',
    INTERNAL_TOKEN: randomBytes(16).toString('hex'),
  }
}

interface ServerAwsHelpers {
  createAwsClients(options: { region: string; endpoint: string }): {
    dynamo: { destroy(): void }
    s3: { destroy(): void }
  }
  createRegistryTable(dynamo: unknown, table: string): Promise<void>
  createSnapshotBucket(s3: unknown, bucket: string): Promise<void>
}

/** What a bench may change in the three servers' cluster. */
export interface Cluster3Extras {
  /** Snapshots in moto's S3, shared by the servers, not on each server's files (a failover reads them). */
  sharedSnapshots?: boolean
  /** Server `index`'s settings (0 to 2) from the cluster's: e.g. its dependencies through relays. */
  envOf?: (index: number, env: Record<string, string>) => Promise<Record<string, string>>
}

/**
 * Three of our servers as a cluster runs them: Redis for the journal (one Redis, as `npm run
 * cluster` has), a real Postgres for metadata, snapshots on each server's files, and moto's
 * DynamoDB as the registry, asked only when a room loads: each room has one owner, which the
 * other servers relay to. `placement` says how the generator places a room's users: all on one
 * server, or over the three.
 */
export async function startSymphonyCluster3(
  options: StartOptions,
  placement: Placement,
  extras: Cluster3Extras = {},
): Promise<StartedServer> {
  const services = await startClusterServices(options, {
    registry: true,
    sharedSnapshots: extras.sharedSnapshots ?? false,
  })
  const envOf = (index: number) => extras.envOf?.(index, services.env) ?? Promise.resolve(services.env)
  // The first migrates the metadata schema; the others find it done.
  const first = await Promise.allSettled([envOf(0).then((env) => startSymphony({ ...options, env }))])
  const others =
    first[0].status === 'fulfilled'
      ? [1, 2].map((index) =>
          envOf(index).then((env) => startSymphony({ ...options, env, readyOnListening: true })),
        )
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
