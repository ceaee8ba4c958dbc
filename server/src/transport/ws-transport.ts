import type { Socket } from 'node:net'
import { WebSocket } from 'ws'
import type { Transport } from '../core/connection.js'
import { type Corkable, corkUntilTurnEnds } from '../cork-until-turn-ends.js'
import { binaryFrame, binaryFrameHeader, UNCOPIED_PAYLOAD_BYTES } from './outgoing-frames.js'
import type { SendProgress } from './socket-liveness.js'

/** How long a peer gets to answer our close frame before its socket is destroyed. */
const CLOSE_HANDSHAKE_MS = 2_000
/** The WebSocket protocol caps a close reason at 123 bytes. */
const MAX_REASON_BYTES = 123

/**
 * Adapts a `ws` socket to the core's `Transport`. Data frames bypass `ws`'s sender: they are
 * framed once per broadcast (`outgoing-frames.ts`) and held here until the event-loop turn ends
 * (`cork-until-turn-ends.ts`), then written to the TCP socket in one write: one buffer for the
 * turn's frames (joined when small), with one callback. Writing each frame to a corked socket
 * cost a `Writable` write per frame (its checks, a buffered entry, a callback each) for the same
 * single syscall. A big payload is never copied: it is written after its header as it is, shared
 * by every socket it is queued on. Control frames (ping, close) still go through `ws`, straight
 * to the socket: a ping lands between two of our frames, never inside one, and our close flushes
 * what is held first.
 */
export class WsTransport implements Transport, Corkable {
  readonly #tcp: Socket
  /** The framed bytes sent this turn and not yet written: whole frames, or a big one's header then payload. */
  readonly #held: Uint8Array[] = []
  #heldBytes = 0
  /** The `onSent` callbacks of the held frames, each distinct one once (they recount; see `Connection`). */
  readonly #onWritten: (() => void)[] = []

  constructor(private readonly socket: WebSocket) {
    // ws keeps the upgraded TCP socket here; it is set before the connection callback runs.
    this.#tcp = (socket as unknown as { _socket: Socket })._socket
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount + this.#heldBytes
  }

  /**
   * How far the kernel has taken what was written to this socket (the frames of this turn still
   * held are not written yet). A big write is taken part by part: libuv's queue, the handle's
   * `writeQueueSize`, shrinks as it is, while Node's buffered length drops only once it is whole.
   */
  get sendProgress(): SendProgress {
    const tcp = this.#tcp
    const handle = (tcp as unknown as { _handle?: { writeQueueSize?: number } })._handle
    const written = tcp.bytesWritten
    return {
      written,
      completed: written - tcp.writableLength,
      untakenInFlight: handle?.writeQueueSize ?? 0,
      buffered: tcp.writableLength,
    }
  }

  send(frame: Uint8Array, onSent?: () => void): void {
    // After a close frame (ours or the peer's) nothing more may be sent.
    if (this.socket.readyState !== WebSocket.OPEN) return
    if (this.#held.length === 0) corkUntilTurnEnds(this)
    if (frame.length < UNCOPIED_PAYLOAD_BYTES) {
      this.#hold(binaryFrame(frame))
    } else {
      this.#hold(binaryFrameHeader(frame.length))
      this.#hold(frame)
    }
    if (onSent && !this.#onWritten.includes(onSent)) this.#onWritten.push(onSent)
  }

  /** Holding starts with the turn's first send (`corkUntilTurnEnds` calls this then). */
  cork(): void {}

  /** The turn ended: writes what it sent, in order, in one write (a socket that closed meanwhile takes none). */
  uncork(): void {
    const held = this.#held
    if (held.length === 0) return
    const bytes = this.#heldBytes
    const callbacks = this.#onWritten.length > 1 ? this.#onWritten.splice(0) : null
    const onWritten = callbacks ? () => callbacks.forEach(call) : this.#onWritten.pop()
    this.#heldBytes = 0
    if (this.socket.readyState !== WebSocket.OPEN) {
      held.length = 0
      onWritten?.() // as a failed socket's: nothing of it is owed any more
      return
    }
    if (held.length === 1) {
      this.#tcp.write(held[0] as Uint8Array, onWritten)
    } else if (bytes < UNCOPIED_PAYLOAD_BYTES) {
      this.#tcp.write(Buffer.concat(held, bytes), onWritten)
    } else {
      // A big payload among them: written as it is, not copied into one buffer.
      this.#tcp.cork()
      for (let index = 0; index < held.length - 1; index++) this.#tcp.write(held[index] as Uint8Array)
      this.#tcp.write(held[held.length - 1] as Uint8Array, onWritten)
      this.#tcp.uncork()
    }
    held.length = 0
  }

  #hold(bytes: Uint8Array): void {
    this.#held.push(bytes)
    this.#heldBytes += bytes.length
  }

  close(code: number, reason: string): void {
    this.uncork() // what was sent before the close leaves before it
    try {
      this.socket.close(code, truncateUtf8(reason, MAX_REASON_BYTES))
    } catch (error) {
      this.socket.terminate() // a close that cannot be sent must still end the socket
      throw error
    }
    // A slow or dead peer may never read our close frame; do not hold its socket for long.
    setTimeout(() => this.socket.terminate(), CLOSE_HANDSHAKE_MS).unref()
  }
}

function call(callback: () => void): void {
  callback()
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text)
  return bytes.length <= maxBytes
    ? text
    : bytes
        .subarray(0, maxBytes)
        .toString()
        .replace(/\uFFFD$/, '')
}
