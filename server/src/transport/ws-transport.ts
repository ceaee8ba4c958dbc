import type { Socket } from 'node:net'
import { WebSocket } from 'ws'
import type { Transport } from '../core/connection.js'
import { corkUntilTurnEnds } from '../cork-until-turn-ends.js'
import { binaryFrame, binaryFrameHeader, UNCOPIED_PAYLOAD_BYTES } from './outgoing-frames.js'

/** How long a peer gets to answer our close frame before its socket is destroyed. */
const CLOSE_HANDSHAKE_MS = 2_000
/** The WebSocket protocol caps a close reason at 123 bytes. */
const MAX_REASON_BYTES = 123

/**
 * Adapts a `ws` socket to the core's `Transport`. Data frames bypass `ws`'s sender: they are
 * framed once per broadcast (`outgoing-frames.ts`) and written straight to the TCP socket,
 * corked per event-loop turn (`cork-until-turn-ends.ts`); a big payload follows its header as it is,
 * shared by every socket it is queued on. Control frames (ping, close) still go through `ws`; a
 * frame's writes are made together, so the two never interleave mid-frame.
 */
export class WsTransport implements Transport {
  readonly #tcp: Socket

  constructor(private readonly socket: WebSocket) {
    // ws keeps the upgraded TCP socket here; it is set before the connection callback runs.
    this.#tcp = (socket as unknown as { _socket: Socket })._socket
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  send(frame: Uint8Array, onSent?: () => void): void {
    // After a close frame (ours or the peer's) nothing more may be sent.
    if (this.socket.readyState !== WebSocket.OPEN) return
    corkUntilTurnEnds(this.#tcp)
    if (frame.length < UNCOPIED_PAYLOAD_BYTES) {
      this.#tcp.write(binaryFrame(frame), onSent)
      return
    }
    this.#tcp.write(binaryFrameHeader(frame.length))
    this.#tcp.write(frame, onSent)
  }

  close(code: number, reason: string): void {
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

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text)
  return bytes.length <= maxBytes
    ? text
    : bytes
        .subarray(0, maxBytes)
        .toString()
        .replace(/\uFFFD$/, '')
}
