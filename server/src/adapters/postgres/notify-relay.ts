import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A loopback TCP relay in front of pglite-socket that makes LISTEN work across connections.
 *
 * pglite-socket multiplexes every wire connection onto PGlite's one session, and a NOTIFY comes
 * back only to the connection that sent it: the NotificationResponse ('A') message sits in that
 * connection's result stream. This relay splits each server-to-client stream into protocol
 * messages and copies every 'A' message to the other connections, at a message boundary.
 * Clients must not ask for TLS (the embedded URL says sslmode=disable).
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

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    onNotification: (message: Buffer) => void,
  ) {
    upstream.on('data', (chunk: Buffer) => {
      this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk
      let offset = 0
      // Each message: a type byte, then a 4-byte length that counts itself and the body.
      while (this.#pending.length - offset >= 5) {
        const end = offset + 1 + this.#pending.readInt32BE(offset + 1)
        if (end > this.#pending.length) break
        if (this.#pending[offset] === 0x41) onNotification(this.#pending.subarray(offset, end))
        offset = end
      }
      if (offset > 0) client.write(this.#pending.subarray(0, offset))
      this.#pending = this.#pending.subarray(offset)
    })
  }

  /** Writes a whole message from elsewhere; our own stream is always at a boundary here. */
  inject(message: Buffer): void {
    this.client.write(Buffer.from(message))
  }

  destroy(): void {
    this.client.destroy()
    this.upstream.destroy()
  }
}
