import { createHash, randomBytes } from 'node:crypto'
import { type Socket, connect as tcpConnect } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { CloseCode } from '@symphony/client/wire'

/**
 * The smallest WebSocket client (RFC 6455) that can carry a light virtual user: binary messages,
 * ping, close. `ws` spends most of the generator's core in its stream layers; this parses frames
 * straight out of each TCP chunk and writes each message in one call, so one core drives about
 * twice the users. Servers never fragment y-websocket messages, so fragments are refused.
 */
export interface LeanSocketEvents {
  open(): void
  message(payload: Buffer): void
  /** The server refused the upgrade (its HTTP status) or the connection failed (status 0). */
  refused(status: number, reason: string): void
  close(code: number, reason: string): void
}

enum Opcode {
  Text = 1,
  Binary = 2,
  Close = 8,
  Ping = 9,
  Pong = 10,
}
const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
const NO_STATUS = 1005
/** Closed without a close frame. */
const ABNORMAL = 1006
const MAX_HEADER_BYTES = 16 * 1024
const CLOSE_TIMEOUT_MS = 5_000

export class LeanWebSocket {
  readonly #socket: Socket
  #open = false
  #closed = false
  #closeSent = false
  /**
   * What arrived and is not parsed yet, in pieces: joined only once `#needed` bytes are there, so
   * a frame of megabytes is copied once, not once per chunk (20 MB in 64 KB chunks had cost GBs).
   */
  #pending: Buffer[] = []
  #pendingBytes = 0
  /** The bytes the frame being received takes; 0 while its header is not in. */
  #needed = 0
  readonly #key = randomBytes(16).toString('base64')

  constructor(
    url: string,
    private readonly on: LeanSocketEvents,
  ) {
    const target = new URL(url)
    const secure = target.protocol === 'wss:'
    const port = Number(target.port) || (secure ? 443 : 80)
    this.#socket = secure
      ? tlsConnect({ host: target.hostname, port, servername: target.hostname })
      : tcpConnect({ host: target.hostname, port })
    this.#socket.setNoDelay(true)
    this.#socket.once(secure ? 'secureConnect' : 'connect', () =>
      this.#socket.write(
        `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\n` +
          `Connection: Upgrade\r\nSec-WebSocket-Key: ${this.#key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      ),
    )
    this.#socket.on('data', (chunk: Buffer) => this.#receive(chunk))
    this.#socket.on('error', (error) => this.#end(() => this.#fail(0, error.message)))
    this.#socket.on('close', () => this.#end(() => this.#fail(0, 'connection closed'), ABNORMAL))
  }

  get isOpen(): boolean {
    return this.#open && !this.#closed
  }

  /** One binary message, masked with the all-zero key (see `frame`). */
  send(payload: Uint8Array): void {
    if (this.isOpen) this.#socket.write(frame(Opcode.Binary, payload))
  }

  /** Starts the closing handshake; `close` fires when the server answers or the socket ends. */
  close(code: number = CloseCode.Normal): void {
    if (!this.isOpen || this.#closeSent) return
    this.#closeSent = true
    const body = Buffer.allocUnsafe(2)
    body.writeUInt16BE(code)
    this.#socket.write(frame(Opcode.Close, body))
    // A server that never answers does not hold the socket forever.
    setTimeout(() => this.#socket.destroy(), CLOSE_TIMEOUT_MS).unref()
  }

  terminate(): void {
    this.#socket.destroy()
  }

  /** Stops reading from the socket (what the server sends piles up in its buffers): the attack bench's slow reader. */
  stopReading(): void {
    this.#socket.pause()
  }

  #receive(chunk: Buffer): void {
    this.#pending.push(chunk)
    this.#pendingBytes += chunk.length
    if (this.#pendingBytes < this.#needed) return
    let data = this.#pending.length === 1 ? chunk : Buffer.concat(this.#pending, this.#pendingBytes)
    this.#pending = []
    this.#pendingBytes = 0
    this.#needed = 0
    if (!this.#open) {
      const end = data.indexOf('\r\n\r\n')
      if (end < 0) {
        if (data.length > MAX_HEADER_BYTES) this.#protocolError('response headers too long')
        else this.#keep(data)
        return
      }
      if (!this.#handshake(data.subarray(0, end).toString('latin1'))) return
      data = data.subarray(end + 4)
    }
    let offset = 0
    while (!this.#closed && data.length - offset >= 2) {
      const first = data[offset] ?? 0
      const second = data[offset + 1] ?? 0
      let length = second & 0x7f
      let header = 2
      if (length === 126) {
        if (data.length - offset < 4) break
        length = data.readUInt16BE(offset + 2)
        header = 4
      } else if (length === 127) {
        if (data.length - offset < 10) break
        length = Number(data.readBigUInt64BE(offset + 2))
        header = 10
      }
      const refusal =
        second & 0x80 ? 'the server masked a frame' : first & 0x80 ? null : 'fragments are not supported'
      if (refusal) {
        this.#protocolError(refusal)
        return
      }
      if (data.length - offset < header + length) {
        this.#needed = header + length
        break
      }
      this.#frame(first & 0x0f, data.subarray(offset + header, offset + header + length))
      offset += header + length
    }
    if (offset < data.length) this.#keep(Buffer.from(data.subarray(offset)))
  }

  #keep(rest: Buffer): void {
    this.#pending = [rest]
    this.#pendingBytes = rest.length
  }

  #frame(opcode: number, payload: Buffer): void {
    switch (opcode) {
      case Opcode.Binary:
      case Opcode.Text:
        this.on.message(payload)
        return
      case Opcode.Ping:
        this.#socket.write(frame(Opcode.Pong, payload))
        return
      case Opcode.Pong:
        return
      case Opcode.Close: {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : NO_STATUS
        // Echo the close unless it answers ours, then let the server close the TCP connection.
        if (this.#closeSent) this.#socket.end()
        else this.#socket.end(frame(Opcode.Close, payload.subarray(0, 2)))
        this.#closeSent = true
        this.#end(() => {}, code, payload.subarray(2).toString())
        return
      }
      default:
        this.#protocolError(`unknown opcode ${opcode}`)
    }
  }

  /** Checks the server's 101 answer; false (and refused) for anything else. */
  #handshake(head: string): boolean {
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
    if (status !== 101) {
      this.#end(() => this.on.refused(status, `HTTP ${status}`))
      this.#socket.destroy()
      return false
    }
    const accept = /^sec-websocket-accept:\s*(\S+)/im.exec(head)?.[1]
    const expected = createHash('sha1')
      .update(this.#key + HANDSHAKE_GUID)
      .digest('base64')
    if (accept !== expected) {
      this.#protocolError('wrong Sec-WebSocket-Accept')
      return false
    }
    this.#open = true
    this.on.open()
    return true
  }

  #protocolError(reason: string): void {
    this.#end(() => this.#fail(0, reason), CloseCode.ProtocolError, reason)
    this.#socket.destroy()
  }

  #fail(status: number, reason: string): void {
    this.on.refused(status, reason)
  }

  /** Runs once: `close` for an open socket, else `beforeOpen` (a refusal or failure). */
  #end(beforeOpen: () => void, code = NO_STATUS, reason = ''): void {
    if (this.#closed) return
    this.#closed = true
    if (this.#open) this.on.close(code, reason)
    else beforeOpen()
  }
}

/**
 * A client frame. Clients must mask; the all-zero key leaves the payload as it is, which spares the
 * generator an XOR per byte (masks protect proxies from scripts in browsers, not a concern here).
 */
function frame(opcode: Opcode, payload: Uint8Array): Buffer {
  const length = payload.length
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10
  const bytes = Buffer.allocUnsafe(header + 4 + length)
  bytes.writeUInt32BE(0, header) // the mask key
  bytes[0] = 0x80 | opcode
  if (header === 2) {
    bytes[1] = 0x80 | length
  } else if (header === 4) {
    bytes[1] = 0x80 | 126
    bytes.writeUInt16BE(length, 2)
  } else {
    bytes[1] = 0x80 | 127
    bytes.writeBigUInt64BE(BigInt(length), 2)
  }
  bytes.set(payload, header + 4)
  return bytes
}
