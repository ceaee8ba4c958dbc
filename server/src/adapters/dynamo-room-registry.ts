import { randomUUID } from 'node:crypto'
import {
  type AttributeValue,
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb'
import type { Logger } from '../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../ports/dependency-outcomes.js'
import type {
  LeaseLapse,
  OwnershipClaim,
  RoomOwner,
  RoomRegistry,
  ServerAddress,
} from '../ports/room-registry.js'
import { LeaseHeartbeat, type LeaseOptions } from './lease-heartbeat.js'
import { RecoveryProbe } from './recovery-probe.js'
import { claimStep, isLiveOwner, type OwnerRecord, type ServerLease } from './room-ownership-rules.js'

/** The key the health probe reads: no room has it, as room names hold no control characters. */
const PROBE_ROOM = '\u0000probe'
/** The partition of the servers' own leases (one item per server id), which their rooms' ownership lives by. */
const SERVERS = '\u0000servers'
/** The sort key of a room's owner item (server ids hold no control characters either). */
const OWNER = '\u0000owner'
/** Claims that lose a race are read again; past this many the claim fails (a table in contention). */
const CLAIM_ATTEMPTS = 3

export interface DynamoRoomRegistryOptions extends LeaseOptions {
  tableName: string
  client: DynamoDBClient
  logger: Logger
  /** Told of every failed and successful call to DynamoDB. */
  outcomes?: DependencyOutcomes
}

type Item = Record<string, AttributeValue>

/**
 * `RoomRegistry` in a DynamoDB table: a room's owner in the item (room, `OWNER`), written
 * conditionally on the epoch it replaces; each server's own lease in (`SERVERS`, serverId), its
 * end in `expiresAtMs`, which its rooms' ownership lives by, so a heartbeat writes one item
 * whatever the rooms it owns. Reads judge leases by
 * `expiresAtMs`, since DynamoDB's TTL (on `expiresAt`, in seconds) only deletes expired items
 * eventually, often days later.
 */
export class DynamoRoomRegistry implements RoomRegistry {
  readonly epochsOutliveProcess = true
  readonly #heartbeat: LeaseHeartbeat
  readonly #outcomes: DependencyOutcomes
  /** While failing: a read a third of a lease apart until DynamoDB answers (failures count as `probe`). */
  readonly #probe: RecoveryProbe
  /** This start of the server: a restart under the same id owns nothing of the one before. */
  readonly #boot = randomUUID()
  /** This server's own lease, first written at once: a claim waits for it (retrying it if it failed). */
  #serverLease: Promise<void>

  constructor(
    private readonly self: ServerAddress,
    private readonly options: DynamoRoomRegistryOptions,
  ) {
    const outcomes = options.outcomes ?? IGNORED_OUTCOMES
    this.#outcomes = outcomes
    this.#probe = new RecoveryProbe(
      options.leaseMs / 3,
      () => options.client.send(this.#query(PROBE_ROOM, undefined, 1)),
      () => outcomes.succeeded('registry'),
      (error) => outcomes.failed('registry', 'probe', error),
    )
    this.#heartbeat = new LeaseHeartbeat(
      options,
      (expiresAt) => this.#renew(expiresAt),
      (error) =>
        options.logger.error({ err: error, table: options.tableName }, "this server's lease was not renewed"),
    )
    this.#serverLease = this.#heartbeat.renewNow()
    this.#serverLease.catch(() => {}) // a claim writes it again
  }

  onLeaseLapsed(listener: (lapse: LeaseLapse) => void): void {
    this.#heartbeat.onLapsed(listener)
  }

  async claim(room: string, gone?: RoomOwner): Promise<OwnershipClaim> {
    await this.#serverLease.catch(() => {
      this.#serverLease = this.#heartbeat.renewNow() // owning a room needs a live lease of its own
      return this.#serverLease
    })
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const record = await this.#ownerRecord(room)
      const live =
        record !== null && isLiveOwner(record, await this.#leaseOf(record.serverId), this.options.now())
      const step = claimStep(record, live, { serverId: this.self.serverId, boot: this.#boot }, gone)
      if (step.kind === 'held') return step.claim
      try {
        await this.options.client.send(
          new PutItemCommand({
            TableName: this.options.tableName,
            Item: {
              room: { S: room },
              serverId: { S: OWNER },
              ownerId: { S: this.self.serverId },
              address: { S: this.self.internalAddress },
              epoch: { N: String(step.epoch) },
              boot: { S: this.#boot },
              released: { BOOL: false },
            },
            ...(step.expected === null
              ? { ConditionExpression: 'attribute_not_exists(epoch)' }
              : {
                  ConditionExpression: 'epoch = :expected',
                  ExpressionAttributeValues: { ':expected': { N: String(step.expected) } },
                }),
          }),
        )
        this.#outcomes.succeeded('registry')
        return { owned: true, epoch: step.epoch }
      } catch (error) {
        if ((error as Error).name !== 'ConditionalCheckFailedException') {
          throw this.#error('claim', `could not claim room ${room}`, error)
        }
        // Another server wrote first: read who, again.
      }
    }
    throw this.#error(
      'claim',
      `could not claim room ${room}`,
      new Error(`${CLAIM_ATTEMPTS} claims lost races`),
    )
  }

  async ownerOf(room: string): Promise<RoomOwner | null> {
    const record = await this.#ownerRecord(room)
    if (!record || !isLiveOwner(record, await this.#leaseOf(record.serverId), this.options.now())) return null
    return { serverId: record.serverId, internalAddress: record.internalAddress, epoch: record.epoch }
  }

  async release(room: string, epoch: number): Promise<void> {
    try {
      await this.options.client.send(
        new UpdateItemCommand({
          TableName: this.options.tableName,
          Key: { room: { S: room }, serverId: { S: OWNER } },
          UpdateExpression: 'SET released = :true',
          ConditionExpression: 'ownerId = :me AND boot = :boot AND epoch = :epoch',
          ExpressionAttributeValues: {
            ':true': { BOOL: true },
            ':me': { S: this.self.serverId },
            ':boot': { S: this.#boot },
            ':epoch': { N: String(epoch) },
          },
        }),
      )
      this.#outcomes.succeeded('registry')
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return // not ours at that epoch
      throw this.#error('release', `could not release room ${room}`, error)
    }
  }

  /** Stops the heartbeat only: the leases run out by themselves, as after a crash. */
  async close(): Promise<void> {
    this.#probe.stop()
    this.#heartbeat.stop()
  }

  async #ownerRecord(room: string): Promise<OwnerRecord | null> {
    const item = await this.#get(room, OWNER, 'look up the owner of room')
    const serverId = item?.ownerId?.S
    const internalAddress = item?.address?.S
    const epoch = Number(item?.epoch?.N)
    const boot = item?.boot?.S
    if (!serverId || !internalAddress || !boot || !(epoch > 0)) return null
    return { serverId, internalAddress, epoch, boot, released: item?.released?.BOOL === true }
  }

  async #leaseOf(serverId: string): Promise<ServerLease | undefined> {
    const item = await this.#get(SERVERS, serverId, 'read the lease of server')
    const boot = item?.boot?.S
    const expiresAt = Number(item?.expiresAtMs?.N)
    return boot && expiresAt > 0 ? { boot, expiresAt } : undefined
  }

  async #get(room: string, serverId: string, what: string): Promise<Item | undefined> {
    try {
      const output = await this.options.client.send(
        new GetItemCommand({
          TableName: this.options.tableName,
          Key: { room: { S: room }, serverId: { S: serverId } },
          ConsistentRead: true,
        }),
      )
      return output.Item
    } catch (error) {
      throw this.#error('lookup', `could not ${what} ${room === SERVERS ? serverId : room}`, error)
    }
  }

  /** Writes this server's own lease, to run out at `expiresAtMs`. */
  async #renew(expiresAtMs: number): Promise<void> {
    const Item: Item = {
      room: { S: SERVERS },
      serverId: { S: this.self.serverId },
      address: { S: this.self.internalAddress },
      boot: { S: this.#boot },
      expiresAtMs: { N: String(expiresAtMs) },
      expiresAt: { N: String(Math.ceil(expiresAtMs / 1000)) },
    }
    try {
      await this.options.client.send(new PutItemCommand({ TableName: this.options.tableName, Item }))
    } catch (error) {
      throw this.#error('refresh', "this server's own lease was not refreshed", error)
    }
    this.#outcomes.succeeded('registry')
  }

  #query(room: string, ExclusiveStartKey: Item | undefined, Limit?: number): QueryCommand {
    return new QueryCommand({
      TableName: this.options.tableName,
      KeyConditionExpression: '#room = :room',
      ExpressionAttributeNames: { '#room': 'room' },
      ExpressionAttributeValues: { ':room': { S: room } },
      ConsistentRead: true,
      ExclusiveStartKey,
      Limit,
    })
  }

  /** The error to throw, counted under `action`. */
  #error(action: string, message: string, cause: unknown): Error {
    this.#outcomes.failed('registry', action, cause)
    this.#probe.start()
    const reason = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
    return new Error(`DynamoDB table ${this.options.tableName}: ${message} (${reason})`, { cause })
  }
}

/**
 * Creates the registry table (on-demand, TTL on `expiresAt`) unless it exists, and waits until
 * it is ACTIVE. For scripts and tests; deployments create the table with the infrastructure.
 */
export async function createRegistryTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'room', AttributeType: 'S' },
          { AttributeName: 'serverId', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'room', KeyType: 'HASH' },
          { AttributeName: 'serverId', KeyType: 'RANGE' },
        ],
      }),
    )
  } catch (error) {
    if ((error as Error).name !== 'ResourceInUseException') throw error
  }
  await waitUntilTableExists({ client, minDelay: 1, maxDelay: 5, maxWaitTime: 120 }, { TableName: tableName })
  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }))
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus
  // Enabling it again is an error, so only when it is off.
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      }),
    )
  }
}
