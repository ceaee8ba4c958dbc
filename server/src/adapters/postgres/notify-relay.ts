import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A loopback TCP relay in front of pglite-socket that makes LISTEN work across connections.
 *
 * pglite-socket multiplexes every wire connection onto PGlite's one session, and a NOTIFY comes
 * back only to the connection that sent it: the NotificationResponse ('A') message sits in that
 * connection's result stream. This relay splits each server-to-client stream into protocol
 * messages and copies every 'A' message to the other connections, at a message boundary.
 * A client asking for TLS gets pglite-socket's one-byte refusal passed through and goes on in
 * plain text, as with any server without TLS.
 */
export class NotifyRelay {
  readonly #connections = new Set<RelayedConnection>()

  private constructor(readonly server: Server) {}

  /** Listens on 127.0.0.1:`port` (0: any free port) and relays to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number, port: number): Promise<NotifyRelay> {
    const server = createServer()
    const relay = new NotifyRelay(server)
    server.on('connection', (client) => relay.#relay(client, targetPort))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', resolve)
    })
    return relay
  }

  get port(): number {
    return (this.server.address() as { port: number }).port
  }

  close(): Promise<void> {
    for (const connection of this.#connections) connection.destroy()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  #relay(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1')
    const connection = new RelayedConnection(client, upstream, (message) => {
      for (const other of this.#connections) if (other !== connection) other.inject(message)
    })
    this.#connections.add(connection)
    const drop = () => {
      this.#connections.delete(connection)
      connection.destroy()
    }
    client.on('close', drop).on('error', drop)
    upstream.on('close', drop).on('error', drop)
    client.pipe(upstream)
  }
}

/** One client's connection: forwards server messages whole, so injections land between them. */
class RelayedConnection {
  #pending: Buffer<ArrayBufferLike> = Buffer.alloc(0)
  /** Until the first ReadyForQuery, the client is still starting up: nothing may be injected. */
  #ready = false
  /** The very first server byte may be the one-byte answer to an SSLRequest ('N' or 'S'). */
  #first = true

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    onNotification: (message: Buffer) => void,
  ) {
    upstream.on('data', (chunk: Buffer) => {
      this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk
      let offset = 0
      if (this.#first && this.#pending.length > 0) {
        this.#first = false
        const byte = this.#pending[0]
        // The SSL answer arrives alone: the server then waits for the client's next move.
        if ((byte === 0x4e || byte === 0x53) && this.#pending.length === 1) offset = 1
      }
      // Each message: a type byte, then a 4-byte length that counts itself and the body.
      while (this.#pending.length - offset >= 5) {
        const length = this.#pending.readInt32BE(offset + 1)
        if (length < 4) return this.destroy() // not the Postgres protocol: stop before looping forever
        const end = offset + 1 + length
        if (end > this.#pending.length) break
        const type = this.#pending[offset]
        if (type === 0x5a) this.#ready = true
        if (type === 0x41) onNotification(this.#pending.subarray(offset, end))
        offset = end
      }
      if (offset > 0) client.write(this.#pending.subarray(0, offset))
      this.#pending = this.#pending.subarray(offset)
    })
  }

  /** Writes a whole message from elsewhere, once this client is past start-up. */
  inject(message: Buffer): void {
    if (this.#ready) this.client.write(Buffer.from(message))
  }

  destroy(): void {
    this.client.destroy()
    this.upstream.destroy()
  }
}
