import type { Transport } from '../core/connection.js'
import { encodeRelayMessage, type RelayMessage } from '../protocol/relay-frames.js'

interface Pending {
  frame: Uint8Array
  sessions: number[]
  sent: (() => void)[]
}

/**
 * What the owner sends over one relay link. A room's broadcast hands the very same frame to each
 * of its connections in one turn: sent to sessions of this link one after another, it goes as one
 * `fanout` message, so an update crosses to an edge once whatever the number of its clients there.
 * Only consecutive sends of the same frame merge, so each session's frames keep their order. The
 * link is a `WsTransport`: a turn's messages leave in one write, after the turn's journal appends.
 */
export class RelayLinkSender {
  #pending: Pending | null = null
  #scheduled = false

  constructor(private readonly link: Pick<Transport, 'send' | 'bufferedAmount'>) {}

  get bufferedAmount(): number {
    return this.link.bufferedAmount
  }

  /** `frame` to `session`, merged with the same frame sent to other sessions just before. */
  sendFrame(session: number, frame: Uint8Array, onSent?: () => void): void {
    const pending = this.#pending
    if (pending?.frame === frame) {
      pending.sessions.push(session)
      if (onSent) pending.sent.push(onSent)
      return
    }
    this.flush()
    this.#pending = { frame, sessions: [session], sent: onSent ? [onSent] : [] }
    if (!this.#scheduled) {
      this.#scheduled = true
      queueMicrotask(this.#flushScheduled)
    }
  }

  /** Any other message, after what is pending. */
  send(message: RelayMessage): void {
    this.flush()
    this.link.send(encodeRelayMessage(message))
  }

  flush(): void {
    const pending = this.#pending
    if (!pending) return
    this.#pending = null
    const { frame, sessions, sent } = pending
    const [session] = sessions as [number]
    const message: RelayMessage =
      sessions.length === 1 ? { kind: 'frame', session, frame } : { kind: 'fanout', sessions, frame }
    this.link.send(
      encodeRelayMessage(message),
      sent.length
        ? () => {
            for (const done of sent) done()
          }
        : undefined,
    )
  }

  readonly #flushScheduled = (): void => {
    this.#scheduled = false
    this.flush()
  }
}
