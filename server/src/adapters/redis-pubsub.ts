import type { Redis } from 'ioredis'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { flushAtTurnEnd } from '../cork-until-turn-ends.js'
import type { Logger } from '../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../ports/dependency-outcomes.js'
import type { PubSub, RoomMessageHandler } from '../ports/pubsub.js'
import { isRoomDeletedFrame, ROOM_DELETED_FRAME } from '../protocol/codec.js'
import { ChannelPeers, type SentMark } from './channel-peers.js'
import { chunks, MAX_ITEMS_PER_COMMAND } from './command-batches.js'
import { DEFAULT_REDIS_LINK, type RedisLinkSettings } from './redis-connection.js'
import { DependencyLinks, RedisLink } from './redis-link.js'
import { roomKey } from './room-keys.js'
import { SubscriberHeartbeat } from './subscriber-heartbeat.js'

// A turn's messages in one command: ARGV holds channel, message, channel, message, … in the order
// they were published, so each client's messages keep their order. What subscribers receive is
// unchanged: one message per PUBLISH.
// Returns how many subscribers received each message (see ChannelPeers).
const PUBLISH_MANY = `
local receivers = {}
for i = 1, #ARGV, 2 do receivers[#receivers + 1] = redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end
return receivers`

type PublisherCommands = Redis & {
  publishMany(...channelsAndMessages: (string | Buffer)[]): Promise<number[]>
}

export interface RedisPubSubOptions {
  /** Prepended to every channel name, so several deployments can share one Redis. */
  channelPrefix?: string
  logger: Logger
  /** Told of failures (connection losses, refused commands, missed heartbeats) and of proofs. */
  outcomes?: DependencyOutcomes
  /** Deadlines, keepalive and heartbeats of both connections; each defaults to `DEFAULT_REDIS_LINK`. */
  link?: Partial<RedisLinkSettings>
  /**
   * How long messages gather before they are published, in one command: each command is a write
   * to Redis and one more to every subscriber, which cost more than the messages. 0: at the end
   * of the event-loop turn that published them. Default `DEFAULT_PUBSUB_FLUSH_MS`.
   */
  flushMs?: number
  /** How soon a deletion notice Redis did not take is published again; default `DELETION_RETRY_MS`. */
  deletionRetryMs?: number
}

/**
 * A crossing message waits at most this long for others to share its write, and Redis's wake-up
 * of every other holder: a few ms of latency between servers against a command per turn. 20 ms
 * cost rooms spread over three servers 11 % less CPU than 5 ms, which cost no less than 0 (one
 * command per turn) at 1,000 users (BENCHMARKS.md, 2026-11-26, last).
 */
export const DEFAULT_PUBSUB_FLUSH_MS = 20

/** How soon a deletion notice that Redis did not take is published again (and again, until it does). */
export const DELETION_RETRY_MS = 1_000

/**
 * `PubSub` over Redis: one connection publishes, one subscribes to every room this server
 * holds. Each message is this server's id (a lib0 var-string) followed by the frame bytes, so a
 * server can drop its own messages, which Redis delivers to every subscriber, the sender included.
 * Both connections prove themselves by heartbeats (`RedisLink`), the subscriber by receiving
 * messages on a channel of this server's own; a missed one reopens the connection.
 */
export class RedisPubSub implements PubSub {
  readonly #publisher: RedisLink
  readonly #subscriber: RedisLink
  readonly #heartbeat: SubscriberHeartbeat
  readonly #handlers = new Map<string, RoomMessageHandler>()
  readonly #prefix: string
  /** This server's id, encoded once: every published message starts with these bytes. */
  readonly #header: Uint8Array
  readonly #heartbeatChannel: Buffer
  readonly #logger: Logger
  readonly #outcomes: DependencyOutcomes
  readonly #links: DependencyLinks
  /** This turn's messages, not yet sent: channel, message, channel, message, … */
  #pending: (string | Buffer)[] = []
  /** For each pending message, what `ChannelPeers` knew when it was published. */
  #marks: (SentMark | null)[] = []
  readonly #peers = new ChannelPeers()
  readonly #flushMs: number
  readonly #deletionRetryMs: number
  /**
   * Each subscribed room's channel, named once rather than per message; a pure function of the
   * room, so a name missing here (a room left meanwhile) is only named again.
   */
  readonly #channelNames = new Map<string, string>()
  #flushTimer: NodeJS.Timeout | null = null
  /**
   * Channels whose deletion notice Redis did not take: published again until it does. An update
   * lost on the way is healed by anti-entropy; a lost deletion by nothing but this (or the
   * holder's next save meeting the tombstone).
   */
  readonly #undeliveredDeletions = new Set<string>()
  #deletionRetry: NodeJS.Timeout | null = null
  readonly #lossListeners: (() => void)[] = []
  /** Whether a subscriber connection has subscribed yet: each one after it follows a gap. */
  #subscribedBefore = false
  #closed = false

  constructor(serverId: string, redisUrl: string, options: RedisPubSubOptions) {
    this.#prefix = options.channelPrefix ?? 'symphony:'
    this.#logger = options.logger
    this.#outcomes = options.outcomes ?? IGNORED_OUTCOMES
    this.#flushMs = options.flushMs ?? DEFAULT_PUBSUB_FLUSH_MS
    this.#deletionRetryMs = options.deletionRetryMs ?? DELETION_RETRY_MS
    this.#header = encoding.encode((encoder) => encoding.writeVarString(encoder, serverId))
    const heartbeatChannel = `${this.#prefix}heartbeat:${serverId}`
    this.#heartbeatChannel = Buffer.from(heartbeatChannel)
    this.#links = new DependencyLinks('pubsub', this.#outcomes)
    const settings = { ...DEFAULT_REDIS_LINK, ...options.link }
    const link = { url: redisUrl, settings, links: this.#links, logger: this.#logger }
    this.#publisher = new RedisLink({
      ...link,
      role: 'publisher',
      name: `${serverId}:pub`,
      prove: (connection) => connection.ping(),
      setup: (connection) => connection.defineCommand('publishMany', { numberOfKeys: 0, lua: PUBLISH_MANY }),
    })
    this.#subscriber = new RedisLink({
      ...link,
      role: 'subscriber',
      name: `${serverId}:sub`,
      subscriber: true,
      setup: (connection) =>
        connection.on('messageBuffer', (channel: Buffer, message: Buffer) => this.#receive(channel, message)),
      // Every (re)connection subscribes exactly the rooms held now, and the heartbeat channel.
      onReady: (connection) => {
        this.#peers.forgetReplies()
        this.#subscribeAll(connection)
      },
    })
    this.#heartbeat = new SubscriberHeartbeat({
      channel: heartbeatChannel,
      header: this.#header,
      publisher: this.#publisher,
      subscriber: this.#subscriber,
      settings,
    })
  }

  /** Resolves once Redis has confirmed the subscription (ioredis queues it while reconnecting). */
  async subscribe(room: string, handler: RoomMessageHandler): Promise<void> {
    const channel = this.#channel(room)
    this.#channelNames.set(room, channel)
    // Registered first: a message may arrive right after Redis confirms, before this resolves.
    this.#handlers.set(channel, handler)
    this.#peers.track(channel)
    try {
      await this.#subscriber.run((connection) => connection.subscribe(channel))
      if (this.#links.up) this.#outcomes.succeeded('pubsub')
    } catch (error) {
      if (this.#handlers.get(channel) === handler) {
        this.#handlers.delete(channel)
        this.#peers.forget(channel)
      }
      this.#outcomes.failed('pubsub', 'subscribe', error)
      throw new Error(`Redis refused the subscription to ${channel}: ${(error as Error).message}`, {
        cause: error,
      })
    }
  }

  async unsubscribe(room: string): Promise<void> {
    const channel = this.#channel(room)
    this.#channelNames.delete(room)
    // Dropped first, so nothing is delivered for the room even before Redis confirms.
    this.#handlers.delete(channel)
    this.#peers.forget(channel)
    try {
      await this.#subscriber.run((connection) => connection.unsubscribe(channel))
    } catch (error) {
      this.#outcomes.failed('pubsub', 'unsubscribe', error)
      throw error
    }
  }

  publish(room: string, message: Uint8Array): void {
    // One command per flush window, holding every message published meanwhile: a command per
    // message (its write, its timer, its reply) was most of what a message paid to cross servers.
    const channel = this.#channel(room)
    // A deletion is always published: a server that subscribed and still loads has not announced itself.
    if (this.#peers.isAlone(channel) && !isRoomDeletedFrame(message)) return // nobody else would receive it
    this.#scheduleFlush()
    this.#pending.push(channel, Buffer.concat([this.#header, message]))
    this.#marks.push(this.#peers.sent(channel))
  }

  /** Before the first message of a batch is queued. */
  #scheduleFlush(): void {
    if (this.#pending.length > 0) return
    // Published after the turn's journal appends either way, so peers forward only what is journaled.
    if (this.#flushMs > 0) this.#flushTimer = setTimeout(this.#flush, this.#flushMs)
    else flushAtTurnEnd('publish', this.#flush)
  }

  readonly #flush = (): void => {
    if (this.#flushTimer) clearTimeout(this.#flushTimer)
    this.#flushTimer = null
    const all = this.#pending
    const allMarks = this.#marks
    if (all.length === 0) return
    this.#pending = []
    this.#marks = []
    // While ioredis reconnects it queues the command, which keeps its place among later ones.
    const publisher = this.#publisher.connection as PublisherCommands
    const markRuns = chunks(allMarks, MAX_ITEMS_PER_COMMAND)
    for (const [run, batch] of chunks(all, 2 * MAX_ITEMS_PER_COMMAND).entries()) {
      const marks = markRuns[run] ?? []
      let sent: Promise<number[]>
      try {
        sent =
          batch.length === 2
            ? publisher.publish(batch[0] as string, batch[1] as Buffer).then((receivers) => [receivers])
            : publisher.publishMany(...batch)
      } catch (error) {
        sent = Promise.reject(error)
      }
      sent.then(
        (receivers) => {
          receivers.forEach((count, i) => {
            this.#peers.replied(marks[i] ?? null, count)
          })
        },
        (error: unknown) => {
          this.#outcomes.failed('pubsub', 'publish', error)
          this.#logger.error({ err: error, messages: batch.length / 2 }, 'redis publish failed')
          this.#keepDeletions(batch)
        },
      )
    }
  }

  /** Keeps the failed batch's deletion notices for `#retryDeletions`. */
  #keepDeletions(batch: (string | Buffer)[]): void {
    for (let i = 0; i < batch.length; i += 2) {
      const message = batch[i + 1] as Buffer
      if (isRoomDeletedFrame(message.subarray(this.#header.length)))
        this.#undeliveredDeletions.add(batch[i] as string)
    }
    if (this.#undeliveredDeletions.size === 0 || this.#deletionRetry || this.#closed) return
    this.#deletionRetry = setTimeout(() => this.#retryDeletions(), this.#deletionRetryMs)
    this.#deletionRetry.unref()
  }

  /** Publishes the kept deletion notices again; a batch that fails again keeps them again. */
  #retryDeletions(): void {
    this.#deletionRetry = null
    const channels = [...this.#undeliveredDeletions]
    this.#undeliveredDeletions.clear()
    if (channels.length > 0) this.#scheduleFlush()
    for (const channel of channels) {
      this.#pending.push(channel, Buffer.concat([this.#header, ROOM_DELETED_FRAME]))
      this.#marks.push(null)
    }
  }

  onPossibleLoss(listener: () => void): void {
    this.#lossListeners.push(listener)
  }

  /** False once Redis has said that only this server received the room's latest message. */
  mayHavePeers(room: string): boolean {
    return !this.#peers.isAlone(this.#channel(room))
  }

  async close(): Promise<void> {
    if (this.#deletionRetry) clearTimeout(this.#deletionRetry)
    this.#retryDeletions() // a last try for the notices Redis has not taken yet
    this.#closed = true
    this.#heartbeat.stop()
    this.#flush() // this turn's publishes go out ahead of QUIT, which waits for them
    this.#handlers.clear()
    await Promise.all([this.#publisher.close(), this.#subscriber.close()])
  }

  #channel(room: string): string {
    return this.#channelNames.get(room) ?? `${this.#prefix}room:${roomKey(room)}`
  }

  #receive(channel: Buffer, message: Buffer): void {
    // Half of what arrives is our own (Redis echoes to the sender): dropped before any work,
    // but for the heartbeat, which comes back to prove the subscriber.
    if (message.length >= this.#header.length && startsWith(message, this.#header)) {
      if (channel.equals(this.#heartbeatChannel)) this.#heartbeat.received(message)
      return
    }
    const name = channel.toString()
    this.#peers.heard(name)
    this.#dispatch(name, message)
  }

  #subscribeAll(connection: Redis): void {
    const rooms = [...this.#handlers.keys()]
    const channels = [this.#heartbeatChannel.toString(), ...rooms]
    // Subscribing again is idempotent, and does not rely on ioredis having recorded every channel.
    connection.subscribe(...channels).then(
      () => {
        this.#announce(rooms)
        // What was published while this server was not subscribed never arrives.
        if (this.#subscribedBefore) for (const listener of this.#lossListeners) listener()
        this.#subscribedBefore = true
      },
      (error: unknown) => {
        if (connection !== this.#subscriber.connection) return // replaced meanwhile: the new one subscribes
        this.#outcomes.failed('pubsub', 'resubscribe', error)
        this.#logger.error({ err: error, channels: channels.length }, 'redis re-subscription failed')
      },
    )
  }

  /**
   * Tells each room's other holders that this server listens again (its subscriber reconnected):
   * one that held the room alone meanwhile, publishing nothing, publishes again. An announcement
   * is the sender id alone, no frame: receivers note the sender and deliver nothing.
   */
  #announce(channels: string[]): void {
    for (const channel of channels) {
      if (!this.#handlers.has(channel)) continue // left meanwhile
      this.#scheduleFlush()
      this.#pending.push(channel, Buffer.from(this.#header))
      this.#marks.push(this.#peers.sent(channel))
    }
  }

  #dispatch(channel: string, message: Buffer): void {
    const handler = this.#handlers.get(channel)
    if (!handler) return // unsubscribed while Redis was still sending
    let frameStart: number
    try {
      // The sender id is skipped, not decoded: a string per message is garbage nobody reads.
      const decoder = decoding.createDecoder(message)
      frameStart = decoding.readVarUint(decoder) + decoder.pos
      if (frameStart > message.length) throw new Error('the sender id runs past the message')
      if (frameStart === message.length) return // an announcement (`#announce`): heard, nothing to deliver
    } catch (error) {
      this.#logger.warn({ err: error, channel }, 'dropped a pub/sub message without a sender id')
      return
    }
    // Copied: ioredis hands out views into a parser buffer that it reuses for later large replies,
    // and the core may hold a message (the buffer kept while a room loads).
    handler(new Uint8Array(message.subarray(frameStart)))
  }
}

/** A var-string prefix is self-delimiting, so equal leading bytes mean exactly this sender id. */
function startsWith(message: Uint8Array, prefix: Uint8Array): boolean {
  for (let i = 0; i < prefix.length; i++) if (message[i] !== prefix[i]) return false
  return true
}
