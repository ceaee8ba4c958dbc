/**
 * Server-to-client WebSocket framing (RFC 6455 § 5.2: FIN, binary opcode, unmasked), done once
 * per message rather than once per recipient: a broadcast hands the same payload to every
 * connection in turn, so the last framing is remembered and reused.
 */
let lastPayload: Uint8Array | null = null
let lastFrame: Buffer = Buffer.alloc(0)

/**
 * Payloads from this size on are written after their header as they are, never copied: one
 * buffer (a room's sync answer) then serves every socket it is queued on, however many.
 */
export const UNCOPIED_PAYLOAD_BYTES = 64 * 1024

export function binaryFrame(payload: Uint8Array): Buffer {
  if (payload === lastPayload) return lastFrame
  const length = payload.length
  const headerBytes = headerLength(length)
  const frame = Buffer.allocUnsafe(headerBytes + length)
  writeHeader(frame, length)
  frame.set(payload, headerBytes)
  lastPayload = payload
  lastFrame = frame
  return frame
}

/** The header of a binary frame carrying `length` bytes, to be written before them. */
export function binaryFrameHeader(length: number): Buffer {
  const header = Buffer.allocUnsafe(headerLength(length))
  writeHeader(header, length)
  return header
}

function headerLength(length: number): number {
  return length < 126 ? 2 : length < 65_536 ? 4 : 10
}

function writeHeader(frame: Buffer, length: number): void {
  const headerBytes = headerLength(length)
  frame[0] = 0x82 // FIN + binary
  if (headerBytes === 2) {
    frame[1] = length
  } else if (headerBytes === 4) {
    frame[1] = 126
    frame.writeUInt16BE(length, 2)
  } else {
    frame[1] = 127
    frame.writeBigUInt64BE(BigInt(length), 2)
  }
}
