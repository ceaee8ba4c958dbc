import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { apiRoomPath, internalAuthorization, internalRoomPath } from '@symphony/client/wire'
import { freePort, type MotoService, type RedisService, startRedis } from '@symphony/dev-scripts/services'
import { createAwsClients } from '../../src/adapters/aws-clients.js'
import { createRegistryTable } from '../../src/adapters/dynamo-room-registry.js'
import { createSnapshotBucket } from '../../src/adapters/s3-snapshot-store.js'
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js'
import { uniqueName } from '../helpers/services.js'
import { TcpLink } from '../helpers/tcp-link.js'

const BUCKET = 'symphony-fault-suite'
const REGION = 'us-east-1'

/** Each server's own relays to its dependencies, which the injector can cut, hang or slow. */
export interface ServerLinks {
  redis: TcpLink
  s3: TcpLink
  dynamodb: TcpLink
}

interface Node {
  port: number
  links: ServerLinks
  process: ServerProcess | null
  generation: number
  paused: boolean
}

export interface FaultClusterOptions {
  servers: number
  /** The suite's own moto (so pausing it stalls no other test file). */
  moto: MotoService
  /** Server settings (timings) on top of the cluster's wiring. */
  env: Record<string, string>
}

/**
 * A real local cluster as `npm run cluster` runs it: sync server processes of the built server on
 * fixed ports (a restart comes back where the writers expect it), sharing a Redis of their own
 * (started without persistence) for the journal, and moto for the registry and the
 * snapshots. Every server reaches Redis, S3 and DynamoDB through links of its own.
 */
export class FaultCluster {
  readonly apiSecret = randomBytes(24).toString('hex')
  readonly #internalToken = randomBytes(16).toString('hex')
  readonly #table = uniqueName('fault-rooms')
  readonly #prefix = `${uniqueName('fault')}/`
  /** Every process started, for the error summary. */
  readonly #processes: ServerProcess[] = []

  private constructor(
    readonly redis: RedisService,
    readonly moto: MotoService,
    private readonly nodes: Node[],
    private readonly env: Record<string, string>,
  ) {}

  static async start({ servers, moto, env }: FaultClusterOptions): Promise<FaultCluster> {
    const redis = await startRedis()
    const nodes = await Promise.all(
      Array.from({ length: servers }, async () => ({
        port: await freePort(),
        links: {
          redis: await TcpLink.open(redis.port),
          s3: await TcpLink.open(moto.port),
          dynamodb: await TcpLink.open(moto.port),
        },
        process: null,
        generation: 0,
        paused: false,
      })),
    )
    const cluster = new FaultCluster(redis, moto, nodes, env)
    const aws = createAwsClients({ region: REGION, endpoint: moto.endpoint })
    try {
      await Promise.all([
        createRegistryTable(aws.dynamo, cluster.#table),
        createSnapshotBucket(aws.s3, BUCKET),
      ])
    } finally {
      aws.s3.destroy()
      aws.dynamo.destroy()
    }
    await Promise.all(nodes.map((_, i) => cluster.startServer(i)))
    return cluster
  }

  get size(): number {
    return this.nodes.length
  }

  url(server: number): string {
    return `ws://127.0.0.1:${this.#node(server).port}`
  }

  links(server: number): ServerLinks {
    return this.#node(server).links
  }

  isRunning(server: number): boolean {
    const child = this.#node(server).process?.child
    return !!child && child.exitCode === null && child.signalCode === null
  }

  isPaused(server: number): boolean {
    return this.#node(server).paused
  }

  /** Starts the server (again) on its port, with a new SERVER_ID, as a replaced task would be. */
  async startServer(server: number): Promise<void> {
    const node = this.#node(server)
    node.generation++
    node.paused = false
    const { redis, s3, dynamodb } = node.links
    node.process = await startServerProcess({
      AUTH: 'none',
      SERVER_ID: `s${server}g${node.generation}`,
      PORT: String(node.port),
      PUBSUB: `redis://127.0.0.1:${redis.port}`,
      REGISTRY: `dynamodb://${this.#table}`,
      SNAPSHOTS: `s3://${BUCKET}/${this.#prefix}`,
      DATABASE_URL: 'none',
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3.port}`,
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${dynamodb.port}`,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      INTERNAL_PORT: '0',
      INTERNAL_HOST: '127.0.0.1',
      INTERNAL_TOKEN: this.#internalToken,
      API_SECRET: this.apiSecret,
      LOG_LEVEL: 'info',
      ...this.env,
    })
    this.#processes.push(node.process)
  }

  /** Sends SIGKILL at once, before it first awaits; resolves once the process has exited. */
  async kill(server: number): Promise<void> {
    const running = this.#node(server).process
    if (!running || !this.isRunning(server)) return
    running.child.kill('SIGKILL')
    await running.exited
  }

  pause(server: number): void {
    if (!this.isRunning(server)) return
    this.#node(server).process?.child.kill('SIGSTOP')
    this.#node(server).paused = true
  }

  resume(server: number): void {
    if (this.isRunning(server)) this.#node(server).process?.child.kill('SIGCONT')
    this.#node(server).paused = false
  }

  /** SIGTERM to every server at once (each saves its rooms); SIGKILL after `timeoutMs`. */
  async terminateAll(timeoutMs: number): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node, i) => {
        if (!node.process || !this.isRunning(i)) return
        this.resume(i)
        node.process.child.kill('SIGTERM')
        const timer = setTimeout(() => node.process?.child.kill('SIGKILL'), timeoutMs)
        await node.process.exited
        clearTimeout(timer)
      }),
    )
  }

  /** The room's state as the server holds it now (its internal endpoint), or null when it does not hold it. */
  async heldState(server: number, room: string): Promise<Uint8Array | null> {
    const address = this.#node(server).process?.internalAddress
    if (!address || !this.isRunning(server)) return null
    const response = await fetch(`http://${address}${internalRoomPath(room, 'state')}`, {
      headers: { authorization: internalAuthorization(this.#internalToken) },
      signal: AbortSignal.timeout(5_000),
    })
    if (response.status === 404) return null
    if (!response.ok) throw new Error(`internal state of ${room} on server ${server}: ${response.status}`)
    return new Uint8Array(await response.arrayBuffer())
  }

  /** The room's whole state through the REST API of `server`, which loads the room if need be. */
  async restState(server: number, room: string): Promise<Uint8Array> {
    const response = await this.#api(server, room, 'update', 'GET', 15_000)
    if (!response.ok) throw new Error(`GET update of ${room} on server ${server}: ${response.status}`)
    return new Uint8Array(await response.arrayBuffer())
  }

  /** DELETE /api/v1/rooms/{room} on `server`; resolves to the response's status. */
  async deleteRoom(server: number, room: string, timeoutMs: number): Promise<number> {
    return (await this.#api(server, room, '', 'DELETE', timeoutMs)).status
  }

  /** How many journal writes the server has seen fail (its `/metrics`); 0 when it does not answer. */
  async journalFailures(server: number): Promise<number> {
    try {
      const response = await fetch(`http://127.0.0.1:${this.#node(server).port}/metrics`, {
        signal: AbortSignal.timeout(2_000),
      })
      return metricSum(await response.text(), 'symphony_journal_failures_total')
    } catch {
      return 0
    }
  }

  /** The error lines the servers logged, by message, most frequent first. */
  errorSummary(): { msg: string; count: number }[] {
    const counts = new Map<string, number>()
    for (const started of this.#processes) {
      for (const entry of started.logs) {
        if (entry.level !== 'error' && entry.level !== 50) continue
        const msg = String(entry.msg)
        counts.set(msg, (counts.get(msg) ?? 0) + 1)
      }
    }
    return [...counts].map(([msg, count]) => ({ msg, count })).sort((a, b) => b.count - a.count)
  }

  /**
   * Writes every server process's log lines, one file per process (`s1g2.jsonl`: server 1's
   * second start), into `dir`, for a replay that needs more than the report's error summary.
   */
  writeLogs(dir: string): void {
    mkdirSync(dir, { recursive: true })
    for (const started of this.#processes) {
      const serverId = String(started.logs[0]?.serverId ?? `pid${started.child.pid}`)
      writeFileSync(
        join(dir, `${serverId}.jsonl`),
        started.logs.map((entry) => JSON.stringify(entry)).join('\n'),
      )
    }
  }

  /** Kills what is left: servers, links and Redis; moto, the caller's, is only resumed should a fault have left it stopped. */
  async stop(): Promise<void> {
    process.kill(this.moto.pid, 'SIGCONT')
    await Promise.all(
      this.nodes.map((_, i) => {
        this.resume(i)
        return this.kill(i)
      }),
    )
    for (const node of this.nodes) for (const link of Object.values(node.links)) link.close()
    await this.redis.stop()
  }

  #api(server: number, room: string, part: '' | 'update', method: string, timeoutMs: number) {
    return fetch(`http://127.0.0.1:${this.#node(server).port}${apiRoomPath(room, part)}`, {
      method,
      headers: { authorization: `Bearer ${this.apiSecret}` },
      signal: AbortSignal.timeout(timeoutMs),
    })
  }

  #node(server: number): Node {
    const node = this.nodes[server]
    if (!node) throw new Error(`no server ${server}`)
    return node
  }
}

/** The sum of a Prometheus counter's samples, whatever their labels. */
function metricSum(metrics: string, name: string): number {
  let sum = 0
  for (const line of metrics.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(' ').at(-1))
  }
  return sum
}
