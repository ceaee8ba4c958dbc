/** What a channel's replies and messages have told about other servers subscribing to it. */
interface Channel {
  /** The last reply said no other server received our message, and nothing was heard since. */
  alone: boolean
  /** Bumped by every message heard from another server, and by a reconnection: older replies are stale. */
  epoch: number
}

/** Taken when a message is sent, handed back with Redis's reply to it. */
export interface SentMark {
  channel: Channel
  epoch: number
}

/**
 * Which subscribed channels this server holds alone, learnt from what Redis answers a PUBLISH
 * (how many subscribers received it: 1 is this server's own subscriber). A channel held alone
 * is not published to: no message is paid for that only Redis and its sender would see. A
 * server that subscribes later announces itself by publishing (the room's digest once loaded, an
 * announcement when its subscriber reconnects);
 * hearing any message from another server makes the channel shared again, and the digest's
 * answer carries what was not published meanwhile.
 */
export class ChannelPeers {
  readonly #channels = new Map<string, Channel>()

  track(channel: string): void {
    if (!this.#channels.has(channel)) this.#channels.set(channel, { alone: false, epoch: 0 })
  }

  forget(channel: string): void {
    this.#channels.delete(channel)
  }

  isAlone(channel: string): boolean {
    return this.#channels.get(channel)?.alone ?? false
  }

  /** A message from another server arrived on `channel`. */
  heard(channel: string): void {
    const known = this.#channels.get(channel)
    if (!known) return
    known.alone = false
    known.epoch++
  }

  sent(channel: string): SentMark | null {
    const known = this.#channels.get(channel)
    return known ? { channel: known, epoch: known.epoch } : null
  }

  /** Redis delivered the message sent at `mark` to `receivers` subscribers. */
  replied(mark: SentMark | null, receivers: number): void {
    // Stale when the channel was forgotten (a later subscription has a record of its own) or
    // something was heard since the message was sent: a peer that joined after Redis counted.
    if (!mark || mark.channel.epoch !== mark.epoch) return
    mark.channel.alone = receivers <= 1
  }

  /** The subscriber (re)connected: what it missed meanwhile is unknown, so every channel is shared. */
  forgetReplies(): void {
    for (const known of this.#channels.values()) {
      known.alone = false
      known.epoch++
    }
  }
}
