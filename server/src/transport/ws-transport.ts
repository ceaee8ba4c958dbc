import type { WebSocket } from 'ws'
import type { Transport } from '../core/connection.js'

/** How long a peer gets to answer our close frame before its socket is destroyed. */
const CLOSE_HANDSHAKE_MS = 2_000
/** The WebSocket protocol caps a close reason at 123 bytes. */
const MAX_REASON_BYTES = 123

/** Adapts a `ws` socket to the core's `Transport`. */
export class WsTransport implements Transport {
  constructor(private readonly socket: WebSocket) {}

  get bufferedAmount(): number {
    return this.socket.bufferedAmount
  }

  send(frame: Uint8Array): void {
    this.socket.send(frame)
  }

  close(code: number, reason: string): void {
    this.socket.close(code, truncateUtf8(reason, MAX_REASON_BYTES))
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
