/**
 * `npm run bench:joins`: how long a client waits to sync while users join a cluster at a steady
 * rate. Three sync servers share Redis (the journal), DynamoDB and S3 (moto, optionally
 * behind a relay that delays every chunk by `--store-latency-ms`), each room's users spread over
 * the servers as a load balancer would. Prints connect p50/p99 (socket open to the server's sync
 * step 2) and how many clients were closed before they synced, with their reasons.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type MotoService, type RedisService, startMoto, startRedis } from '@symphony/dev-scripts/services'
import { metric } from '../measurement/server-stats.js'
import type { Report } from '../reporting/report-schema.js'
import { runGenerator } from './generator.js'
import { type LatencyRelay, startLatencyRelay } from './latency-relay.js'
import { cpuPinning, pin, type StartedServer, startSymphony } from './servers.js'

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: '3' },
    users: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '100' },
    'per-room': { type: 'string', default: '4' },
    duration: { type: 'string', default: '10' },
    'store-latency-ms': { type: 'string', default: '0' },
    repeat: { type: 'string', default: '1' },
    workload: { type: 'string', default: 'symphony' },
  },
})
const serverCount = Number(values.servers)
const perRoom = Number(values['per-room'])
const users = Number(values.users)
const rate = Number(values.rate)
const storeLatencyMs = Number(values['store-latency-ms'])
const rooms = Math.ceil(users / perRoom)
const ramp = users / rate
const pinning = cpuPinning()
const REGION = 'us-east-1'
const TABLE = 'symphony-bench-rooms'
const BUCKET = 'symphony-bench-snapshots'
// The emulator takes any credentials; these keep real ones out of its way.
process.env.AWS_ACCESS_KEY_ID = 'test'
process.env.AWS_SECRET_ACCESS_KEY = 'test'
delete process.env.AWS_SESSION_TOKEN

/** The built server's helpers that provision the table and bucket (the bench has no build-time link to it). */
interface ServerPackage {
  createAwsClients(options: { region: string; endpoint: string }): {
    s3: { destroy(): void }
    dynamo: { destroy(): void }
  }
  createRegistryTable(client: unknown, table: string): Promise<void>
  createSnapshotBucket(client: unknown, bucket: string): Promise<void>
}

interface Cluster {
  servers: StartedServer[]
  redis: RedisService
  moto: MotoService
  relay: LatencyRelay
}

async function startCluster(round: number): Promise<Cluster> {
  const [redis, moto] = await Promise.all([startRedis(), startMoto()])
  if (pinning) pin(redis.pid, pinning.server)
  const relay = await startLatencyRelay(moto.port, 0)
  const server = (await import('@symphony/server' as string)) as ServerPackage
  const aws = server.createAwsClients({ region: REGION, endpoint: moto.endpoint })
  try {
    await server.createRegistryTable(aws.dynamo, TABLE)
    await server.createSnapshotBucket(aws.s3, BUCKET)
  } finally {
    aws.dynamo.destroy()
    aws.s3.destroy()
  }
  const env = {
    DATABASE_URL: 'none',
    PUBSUB: redis.url,
    JOURNAL: redis.url,
    REGISTRY: `dynamodb://${TABLE}`,
    SNAPSHOTS: `s3://${BUCKET}/round-${round}/`,
    AWS_ENDPOINT_URL: `http://127.0.0.1:${relay.port}`,
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    INTERNAL_PORT: '0',
    INTERNAL_HOST: '127.0.0.1',
    INTERNAL_TOKEN: 'bench-internal-token-0123456789',
  }
  const servers = await Promise.all(
    Array.from({ length: serverCount }, (_, i) =>
      startSymphony({ cpus: pinning?.server, env: { ...env, SERVER_ID: `bench-${i + 1}` } }),
    ),
  )
  // Only the loads are slowed: the table and bucket exist, the servers are up.
  relay.setDelay(storeLatencyMs)
  return { servers, redis, moto, relay }
}

async function stopCluster(cluster: Cluster): Promise<void> {
  cluster.relay.setDelay(0) // the servers save and deregister at full speed
  await Promise.all(cluster.servers.map((server) => server.stop()))
  await cluster.relay.close()
  await Promise.all([cluster.redis.stop(), cluster.moto.stop()])
}

/** What the servers' /metrics say about waiting for rooms to load, summed over the servers. */
async function waitFigures(servers: StartedServer[]): Promise<string> {
  const texts = await Promise.all(
    servers.map(async (server) => (await fetch(`${server.url.replace(/^ws/, 'http')}/metrics`)).text()),
  )
  const total = (name: string) => texts.reduce((sum, text) => sum + (metric(text, name) ?? 0), 0)
  const dependencies = ['registry', 'snapshots', 'journal'].map((dependency) => {
    const label = `{dependency="${dependency}"}`
    const count = total(`symphony_room_load_wait_seconds_count${label}`)
    const sum = total(`symphony_room_load_wait_seconds_sum${label}`)
    const p99 = histogramQuantile(texts, 'symphony_room_load_wait_seconds_bucket{', 0.99, label.slice(1, -1))
    return `${dependency} ${count} calls, mean ${count ? ((sum / count) * 1000).toFixed(0) : '-'} ms, p99 <= ${p99}`
  })
  return [
    `join waits expired ${total('symphony_join_waits_expired_total')}, load retries ${total('symphony_room_load_retries_total')}`,
    `join wait p99 <= ${histogramQuantile(texts, 'symphony_join_wait_seconds_bucket{', 0.99)}`,
    `load waits: ${dependencies.join('; ')}`,
  ].join('\n    ')
}

/** The upper bound of the bucket holding quantile `q` of a Prometheus histogram, over several servers. */
function histogramQuantile(texts: string[], bucketPrefix: string, q: number, withLabel = ''): string {
  const counts = new Map<string, number>()
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (!line.startsWith(bucketPrefix) || !line.includes(withLabel)) continue
      const le = /le="([^"]+)"/.exec(line)?.[1]
      if (le) counts.set(le, (counts.get(le) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)))
    }
  }
  const all = counts.get('+Inf') ?? 0
  if (all === 0) return '-'
  for (const [le, count] of counts)
    if (count >= q * all) return le === '+Inf' ? 'more than the last bucket' : `${le} s`
  return '-'
}

const folder = mkdtempSync(join(tmpdir(), 'symphony-bench-joins-'))
console.log(
  `bench:joins: ${users} users (${rooms} rooms of ${perRoom}, each spread over ${serverCount} servers, ${values.workload} workload) joining at ${rate}/s, store latency ${storeLatencyMs} ms`,
)
console.log(
  pinning
    ? 'servers and Redis pinned to CPU 0, the generator to CPU 1 (moto unpinned)'
    : 'warning: taskset or a second core is missing, so nothing is pinned',
)
try {
  for (let round = 0; round < Number(values.repeat); round++) {
    const cluster = await startCluster(round)
    let report: Report
    let waits: string
    try {
      report = await runGenerator({
        urls: cluster.servers.map((server) => server.url),
        serverPids: [...cluster.servers.map((server) => server.pid), cluster.redis.pid],
        workload: String(values.workload),
        rooms,
        perRoom: String(perRoom),
        duration: String(values.duration),
        ramp: String(ramp),
        json: join(folder, `${round}.json`),
        cpus: pinning?.generator,
        roomPrefix: `joins-${round}-`,
      })
      waits = await waitFigures(cluster.servers)
    } finally {
      await stopCluster(cluster)
    }
    const connect = report.latency.connect
    console.log(
      `  round ${round + 1}: connect p50 ${connect.p50} ms, p99 ${connect.p99} ms, max ${connect.max} ms; ` +
        `synced ${report.counts.connected}/${report.counts.connectAttempts}, closed before sync ${report.counts.connectErrors}; ` +
        `servers + Redis CPU mean ${report.server.cpuPercent.mean} % (max ${report.server.cpuPercent.max} %), ` +
        `generator CPU max ${Math.max(0, ...report.agents.map((a) => a.generatorCpuPercent.max))} %\n    ${waits}`,
    )
    for (const error of report.errors.slice(0, 5)) console.log(`    ${error}`)
  }
} finally {
  rmSync(folder, { recursive: true, force: true })
}
