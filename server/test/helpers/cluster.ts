import { randomBytes } from 'node:crypto'
import { after, before } from 'node:test'
import { GetItemCommand } from '@aws-sdk/client-dynamodb'
import { PutObjectCommand } from '@aws-sdk/client-s3'
import { type RedisService, startRedis } from '@symphony/dev-scripts/services'
import { Redis } from 'ioredis'
import * as Y from 'yjs'
import { createRegistryTable } from '../../src/adapters/dynamo-room-registry.js'
import { createSnapshotBucket, S3SnapshotStore } from '../../src/adapters/s3-snapshot-store.js'
import { storedState } from '../../src/contracts/stored-snapshots.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { type ServerProcess, startServerProcess } from './server-process.js'
import { destroyTestAwsClients, requireTestServices, testAwsClients, uniqueName } from './services.js'

const BUCKET = 'symphony-test-snapshots'
const LEASE_MS = 2_000

/** The REST API's secret for cluster servers started with `API_SECRET: CLUSTER_API_SECRET`. */
export const CLUSTER_API_SECRET = 'api-secret-for-tests-0123456789abcdef'

/** A cluster server's REST API, for the versions helpers (started with `API_SECRET: CLUSTER_API_SECRET`). */
export const clusterRest = (server: { httpUrl: string }) => ({
  httpUrl: server.httpUrl,
  apiSecret: CLUSTER_API_SECRET,
})

/** A call to a room's REST API on a cluster server started with `CLUSTER_API_SECRET`. */
export function roomApi(server: { port: number }, room: string, rest = '', init: RequestInit = {}) {
  return fetch(`http://127.0.0.1:${server.port}/api/v1/rooms/${encodeURIComponent(room)}${rest}`, {
    ...init,
    headers: { authorization: `Bearer ${CLUSTER_API_SECRET}`, ...(init.headers as Record<string, string>) },
  })
}

export interface ClusterServer extends ServerProcess {
  name: string
  wsUrl: string
  /** Its public HTTP base: the REST API, and the demo whiteboard at `/`. */
  httpUrl: string
  /** Prometheus text of its /metrics. */
  metrics(): Promise<string>
}

/**
 * A real local cluster for one test file: its own Redis (so tests may restart or partition it
 * without touching other files' tests), the shared AWS emulator with a table and key prefix of
 * its own, and sync servers as real processes of the built server.
 */
export class TestCluster {
  readonly servers: ClusterServer[] = []
  readonly prefix = `${uniqueName('cluster')}/`
  readonly internalToken = randomBytes(16).toString('hex')
  readonly table = uniqueName('rooms')
  #redis: RedisService | undefined

  /** A cluster opened now, for a caller that stops it itself (a test file uses `useTestCluster()`). */
  static async create(): Promise<TestCluster> {
    const cluster = new TestCluster()
    await cluster.open()
    return cluster
  }

  /** Starts its Redis and makes its table and bucket: once, before anything else uses it. */
  async open(): Promise<void> {
    if (this.#redis) throw new Error('the test cluster is open already')
    const { dynamo, s3 } = testAwsClients()
    const [redis] = await Promise.all([
      startRedis(),
      createRegistryTable(dynamo, this.table),
      createSnapshotBucket(s3, BUCKET),
    ])
    this.#redis = redis
  }

  /** The cluster's own Redis (open from its `before` hook on). */
  get redis(): RedisService {
    if (!this.#redis) throw new Error('the test cluster is not open yet: use it in a test or a later hook')
    return this.#redis
  }

  /** Starts one sync server; `env` overrides the cluster defaults (e.g. a Redis URL through a TcpLink). */
  async start(name: string, env: Record<string, string> = {}): Promise<ClusterServer> {
    const { awsEndpoint } = requireTestServices()
    const process = await startServerProcess({
      AUTH: 'none',
      SERVER_ID: name,
      PUBSUB: this.redis.url,
      REGISTRY: `dynamodb://${this.table}`,
      SNAPSHOTS: `s3://${BUCKET}/${this.prefix}`,
      DATABASE_URL: 'none',
      AWS_ENDPOINT_URL: awsEndpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      INTERNAL_PORT: '0',
      INTERNAL_HOST: '127.0.0.1',
      INTERNAL_TOKEN: this.internalToken,
      REGISTRY_LEASE_MS: String(LEASE_MS),
      ROOM_GRACE_MS: '300',
      SNAPSHOT_INTERVAL_MS: '3600000',
      LOG_LEVEL: 'info',
      ...env,
    })
    const server: ClusterServer = {
      ...process,
      name,
      wsUrl: `ws://127.0.0.1:${process.port}`,
      httpUrl: `http://127.0.0.1:${process.port}`,
      metrics: async () => (await fetch(`http://127.0.0.1:${process.port}/metrics`)).text(),
    }
    this.servers.push(server)
    return server
  }

  /** The room's snapshot in S3, or null. */
  async snapshot(room: string): Promise<Uint8Array | null> {
    return storedState(this.#store(), room) // a deleted room's tombstone holds nothing
  }

  /** Writes incarnation `generation`'s tombstone, as a deleting server does first (and may die after). */
  async tombstone(room: string, generation: number): Promise<void> {
    await this.#store().delete(room, generation)
  }

  #store(): S3SnapshotStore {
    return new S3SnapshotStore({ bucket: BUCKET, prefix: this.prefix, client: testAwsClients().s3 })
  }

  /** The room's saved state as a document (empty if none is saved). */
  async snapshotDoc(room: string): Promise<Y.Doc> {
    const doc = new Y.Doc()
    const state = await this.snapshot(room)
    if (state) Y.applyUpdate(doc, state)
    return doc
  }

  /** A new room whose snapshot in S3 holds `text` in its text `t`. */
  async storedRoom(base: string, text: string): Promise<string> {
    const room = uniqueRoom(base)
    const doc = new Y.Doc()
    doc.getText('t').insert(0, text)
    await this.putSnapshot(room, Y.encodeStateAsUpdate(doc))
    return room
  }

  async putSnapshot(room: string, state: Uint8Array): Promise<void> {
    await testAwsClients().s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `${this.prefix}${room}.ybin`, Body: state }),
    )
  }

  /** Keys in the cluster's Redis matching `pattern`. */
  async redisKeys(pattern: string): Promise<string[]> {
    const redis = new Redis(this.redis.url)
    try {
      return await redis.keys(pattern)
    } finally {
      redis.disconnect()
    }
  }

  /** The registry's owner item of the room, as DynamoDB holds it (null: never owned). */
  async ownerItem(room: string): Promise<{ serverId: string; epoch: number; released: boolean } | null> {
    const { Item } = await testAwsClients().dynamo.send(
      new GetItemCommand({
        TableName: this.table,
        Key: { room: { S: room }, serverId: { S: '\u0000owner' } },
        ConsistentRead: true,
      }),
    )
    if (!Item) return null
    return {
      serverId: Item.ownerId?.S ?? '',
      epoch: Number(Item.epoch?.N ?? 0),
      released: Item.released?.BOOL === true,
    }
  }

  /** Whether server `serverId`'s lease, which the rooms it owns live by, has run out. */
  async leaseExpired(serverId: string): Promise<boolean> {
    const { Item } = await testAwsClients().dynamo.send(
      new GetItemCommand({
        TableName: this.table,
        Key: { room: { S: '\u0000servers' }, serverId: { S: serverId } },
        ConsistentRead: true,
      }),
    )
    return Number(Item?.expiresAtMs?.N ?? 0) < Date.now()
  }

  /** Stops every server still running (SIGKILL: the tests that need SIGTERM send it themselves). */
  async stop(): Promise<void> {
    await Promise.all(
      this.servers.map(async (server) => {
        if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
        await server.exited
      }),
    )
    await this.#redis?.stop() // not there when opening failed
  }
}

/**
 * The cluster of the enclosing `describe`: opened in a `before` hook and stopped in an `after` hook
 * (the shared AWS clients with it), both registered by this call. Hooks registered after it run
 * once it is open, and, for `after`, once it has stopped.
 */
export function useTestCluster(): TestCluster {
  const cluster = new TestCluster()
  before(() => cluster.open())
  after(async () => {
    await cluster.stop()
    destroyTestAwsClients()
  })
  return cluster
}

/** The value of a Prometheus sample line, e.g. `symphony_room_loads_total{source="peer"}`; 0 if absent. */
export function metricValue(metrics: string, sample: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${sample} `))
  return line ? Number(line.slice(sample.length + 1)) : 0
}

export const REGISTRY_LEASE_MS = LEASE_MS
