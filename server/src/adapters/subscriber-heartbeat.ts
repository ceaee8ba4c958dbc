import { Heartbeat, withinDeadline } from './link-heartbeat.js'
import type { RedisLinkSettings } from './redis-connection.js'
import type { RedisLink } from './redis-link.js'

export interface SubscriberHeartbeatOptions {
  /** This server's own channel, which its subscriber subscribes to on every connection. */
  channel: string
  /** What every message this server publishes starts with (its id). */
  header: Uint8Array
  publisher: RedisLink
  subscriber: RedisLink
  settings: RedisLinkSettings
}

/**
 * Proves that the subscriber is subscribed: each round, the publisher sends a fresh message to
 * this server's own channel, and the subscriber must hand it back within the deadline. Only a
 * message that arrives proves the subscriber's connection and its subscriptions at once; a PING,
 * or ioredis's status, proves neither.
 */
export class SubscriberHeartbeat {
  readonly #heartbeat: Heartbeat
  #rounds = 0
  /** The message this round expects back, and what to do when it arrives. */
  #waiting: { expected: Buffer; arrived: () => void } | null = null

  constructor(private readonly options: SubscriberHeartbeatOptions) {
    this.#heartbeat = new Heartbeat(options.settings.heartbeatIntervalMs, () => this.#round())
  }

  /** A message of this server's own arrived on its heartbeat channel. */
  received(message: Buffer): void {
    if (this.#waiting?.expected.equals(message)) this.#waiting.arrived()
  }

  stop(): void {
    this.#heartbeat.stop()
  }

  async #round(): Promise<void> {
    const { channel, header, publisher, subscriber, settings } = this.options
    const expected = Buffer.concat([header, Buffer.from(String(++this.#rounds))])
    const arrived = new Promise<void>((resolve) => {
      this.#waiting = { expected, arrived: resolve }
    })
    let published = false
    publisher.connection.publish(channel, expected).then(
      () => {
        published = true
      },
      () => {}, // the publisher's own heartbeat judges it
    )
    try {
      await withinDeadline(
        arrived,
        settings.heartbeatTimeoutMs,
        "the heartbeat on the subscriber's own channel",
      )
      subscriber.proven()
    } catch (error) {
      // Never published: nothing is known of the subscriber this round.
      if (published) subscriber.missed(error)
    } finally {
      this.#waiting = null
    }
  }
}
