/**
 * The slowest read a downloading peer is granted: what the kernel holds for it (out of our sight)
 * it may take this long to read. A slow mobile link still reads several times as fast.
 */
export const MIN_READ_BYTES_PER_SECOND = 32 * 1024

/** How far the kernel has taken what was written to a socket (`WsTransport.sendProgress`). */
export interface SendProgress {
  /** Every byte written to the socket so far (its `bytesWritten`). */
  written: number
  /** The bytes of the writes the kernel took whole (they only grow). */
  completed: number
  /** What the kernel has still to take of the write in flight (libuv's queue: it shrinks part by part). */
  untakenInFlight: number
  /** Bytes the kernel has not taken yet, in flight or waiting behind (Node's buffered length). */
  buffered: number
}

/**
 * Whether a socket lives, judged by progress rather than by a pong alone: a peer downloading a
 * big document answers a ping only once it has read everything queued ahead of it, which on a slow
 * link takes longer than a ping interval. Each sweep, a socket that answered is pinged again; one
 * that did not is kept while the kernel takes more of what was written to it (the peer reads), or,
 * once all of it is in the kernel's hands (where its progress cannot be seen), for as long as
 * reading what the kernel may hold takes at `MIN_READ_BYTES_PER_SECOND`; otherwise it is dead.
 */
export class SocketLiveness {
  /** Set by a pong or any message; cleared at each ping. */
  #answered = true
  #pingedAt = 0
  /** Where the last ping went in the byte stream, and where the last one answered went. */
  #pingAt = 0
  #answeredAt = 0
  #progress: SendProgress

  constructor(progress: SendProgress) {
    this.#progress = progress
  }

  /** A pong came back: the peer has read everything up to the ping it answers. */
  pong(): void {
    this.#answered = true
    this.#answeredAt = this.#pingAt
  }

  /** The peer sent something: it is there. */
  heard(): void {
    this.#answered = true
  }

  /** The sweep's verdict: ping it (again), wait for it, or close it. */
  sweep(progress: SendProgress, now: number): 'ping' | 'wait' | 'dead' {
    const before = this.#progress
    this.#progress = progress
    if (this.#answered) {
      this.#answered = false
      this.#pingedAt = now
      this.#pingAt = progress.written
      return 'ping'
    }
    const taken = progress.completed > before.completed || progress.untakenInFlight < before.untakenInFlight
    if (taken) return 'wait'
    // Bytes waited for the kernel the whole interval and it took none: its buffers are full, and
    // the peer reads nothing.
    if (before.buffered > 0 && progress.buffered > 0) return 'dead'
    // All of it is the kernel's: the peer may still be reading what was queued ahead of the ping.
    const ahead = this.#pingAt - this.#answeredAt
    return now - this.#pingedAt < (ahead / MIN_READ_BYTES_PER_SECOND) * 1000 ? 'wait' : 'dead'
  }
}
