import { type Cluster, Redis } from 'ioredis'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { corkUntilTurnEnds } from '../cork-until-turn-ends.js'
import type { Logger } from '../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../ports/dependency-outcomes.js'
import type { PubSub, RoomMessageHandler } from '../ports/pubsub.js'
import { roomKey } from './room-keys.js'

export interface RedisPubSubOptions {
  /** Prepended to every channel name, so several deployments can share one Redis. */
  channelPrefix?: string
  logger: Logger
  /** Told of failures (connection losses, refused commands) and of the connection being ready again. */
  outcomes?: DependencyOutcomes
}

/**
 * `PubSub` over Redis: one connection publishes, one subscribes to every room this server
 * holds. Each message is this server's id (a lib0 var-string) followed by the frame bytes, so a
 * server can drop its own messages, which Redis delivers to every subscriber, the sender included.
 */
export class RedisPubSub implements PubSub {
  readonly #publisher: Redis
  readonly #subscriber: Redis
  readonly #handlers = new Map<string, RoomMessageHandler>()
  readonly #prefix: string
  /** This server's id, encoded once: every published message starts with these bytes. */
  readonly #header: Uint8Array
  readonly #logger: Logger
  readonly #outcomes: DependencyOutcomes
  /** Connections lost and not yet answering again: pub/sub is healthy when none is. */
  readonly #down = new Set<'publisher' | 'subscriber'>()

  constructor(serverId: string, redisUrl: string, options: RedisPubSubOptions) {
    this.#prefix = options.channelPrefix ?? 'symphony:'
    this.#logger = options.logger
    this.#outcomes = options.outcomes ?? IGNORED_OUTCOMES
    this.#header = encoding.encode((encoder) => encoding.writeVarString(encoder, serverId))
    // Not ioredis's autoResubscribe: it would also renew channels unsubscribed during an outage.
    // The 'ready' handler below subscribes exactly the rooms held now.
    const connectionOptions = { lazyConnect: false, autoResubscribe: false }
    this.#publisher = new Redis(redisUrl, { ...connectionOptions, connectionName: `${serverId}:pub` })
    // No ready check on the subscriber: ioredis runs INFO for it, which Redis refuses once a
    // subscription is queued, and the failed check cost the first subscription.
    this.#subscriber = new Redis(redisUrl, {
      ...connectionOptions,
      enableReadyCheck: false,
      connectionName: `${serverId}:sub`,
    })
    this.#watch(this.#publisher, 'publisher')
    this.#watch(this.#subscriber, 'subscriber')
    this.#subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => {
      // Half of what arrives is our own (Redis echoes to the sender): dropped before any work.
      if (message.length >= this.#header.length && startsWith(message, this.#header)) return
      this.#dispatch(channel.toString(), message)
    })
  }

  /** Resolves once Redis has confirmed the subscription (ioredis queues it while reconnecting). */
  async subscribe(room: string, handler: RoomMessageHandler): Promise<void> {
    const channel = this.#channel(room)
    // Registered first: a message may arrive right after Redis confirms, before this resolves.
    this.#handlers.set(channel, handler)
    try {
      await this.#subscriber.subscribe(channel)
      if (this.#down.size === 0) this.#outcomes.succeeded('pubsub')
    } catch (error) {
      if (this.#handlers.get(channel) === handler) this.#handlers.delete(channel)
      this.#outcomes.failed('pubsub', 'subscribe', error)
      throw new Error(`Redis refused the subscription to ${channel}: ${(error as Error).message}`, {
        cause: error,
      })
    }
  }

  async unsubscribe(room: string): Promise<void> {
    const channel = this.#channel(room)
    // Dropped first, so nothing is delivered for the room even before Redis confirms.
    this.#handlers.delete(channel)
    try {
      await this.#subscriber.unsubscribe(channel)
    } catch (error) {
      this.#outcomes.failed('pubsub', 'unsubscribe', error)
      throw error
    }
  }

  publish(room: string, message: Uint8Array): void {
    // One write to Redis per event-loop turn instead of one per message, which was most of what
    // a message paid to cross servers. (While ioredis reconnects there is no socket: it queues.)
    const socket = this.#publisher.stream
    if (socket) corkUntilTurnEnds(socket)
    const channel = this.#channel(room)
    this.#publisher.publish(channel, Buffer.concat([this.#header, message])).catch((error: unknown) => {
      this.#outcomes.failed('pubsub', 'publish', error)
      this.#logger.error({ err: error, channel, bytes: message.length }, 'redis publish failed')
    })
  }

  /** Redis could say (PUBSUB NUMSUB), but only by a round trip: always assume peers. */
  mayHavePeers(_room: string): boolean {
    return true
  }

  async close(): Promise<void> {
    this.#publisher.stream?.uncork() // queued publishes go out ahead of QUIT, which waits for them
    this.#handlers.clear()
    await Promise.all([closeConnection(this.#publisher), closeConnection(this.#subscriber)])
  }

  #channel(room: string): string {
    return `${this.#prefix}room:${roomKey(room)}`
  }

  #dispatch(channel: string, message: Buffer): void {
    const handler = this.#handlers.get(channel)
    if (!handler) return // unsubscribed while Redis was still sending
    let frameStart: number
    try {
      const decoder = decoding.createDecoder(message)
      decoding.readVarString(decoder)
      frameStart = decoder.pos
    } catch (error) {
      this.#logger.warn({ err: error, channel }, 'dropped a pub/sub message without a sender id')
      return
    }
    // Copied: ioredis hands out views into a parser buffer that it reuses for later large replies,
    // and the core may hold a message (the buffer kept while a room loads).
    handler(new Uint8Array(message.subarray(frameStart)))
  }

  #watch(connection: Redis, role: 'publisher' | 'subscriber'): void {
    let reconnecting = false
    connection.on('error', (error: Error) => {
      this.#down.add(role)
      this.#outcomes.failed('pubsub', 'connection', error)
      this.#logger.error({ err: error, role }, 'redis connection error')
    })
    connection.on('reconnecting', (delayMs: number) => {
      reconnecting = true
      this.#down.add(role)
      this.#outcomes.failed('pubsub', 'disconnect', new Error(`the ${role} connection to Redis was lost`))
      this.#logger.warn({ role, delayMs }, 'redis connection lost, reconnecting')
    })
    connection.on('ready', () => {
      // Up once Redis answers: 'ready' alone only means TCP connected for the subscriber (no ready check).
      connection.ping().then(
        () => {
          this.#down.delete(role)
          if (this.#down.size === 0) this.#outcomes.succeeded('pubsub')
        },
        () => {}, // the connection failed again: its error is reported
      )
      if (!reconnecting) return
      reconnecting = false
      const channels = role === 'subscriber' ? [...this.#handlers.keys()] : []
      this.#logger.warn({ role, channels: channels.length }, 'redis connection restored')
      // Subscribing again is idempotent, and does not rely on ioredis having recorded every channel.
      if (channels.length > 0) {
        connection.subscribe(...channels).catch((error: unknown) => {
          this.#outcomes.failed('pubsub', 'resubscribe', error)
          this.#logger.error({ err: error, channels: channels.length }, 'redis re-subscription failed')
        })
      }
    })
  }
}

/** A var-string prefix is self-delimiting, so equal leading bytes mean exactly this sender id. */
function startsWith(message: Uint8Array, prefix: Uint8Array): boolean {
  for (let i = 0; i < prefix.length; i++) if (message[i] !== prefix[i]) return false
  return true
}

/**
 * QUIT waits for pending replies (so queued publishes go out), but only on a live connection:
 * while ioredis is reconnecting it would queue QUIT behind them indefinitely, so disconnect then.
 */
export async function closeConnection(connection: Redis | Cluster): Promise<void> {
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
