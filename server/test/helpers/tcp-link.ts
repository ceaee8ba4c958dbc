import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP relay that a test can cut and restore, to partition one server from Redis while the
 * others keep talking to it.
 */
export class TcpLink {
  readonly #sockets = new Set<Socket>()
  #cut = false
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async open(targetPort: number): Promise<TcpLink> {
    let link: TcpLink | null = null
    const server = createServer((client) => {
      if (link) link.#relay(client, targetPort)
      else client.destroy()
    })
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    )
    link = new TcpLink(server, port)
    return link
  }

  /** Drops every relayed connection and refuses new ones until `restore`. */
  cut(): void {
    this.#cut = true
    for (const socket of this.#sockets) socket.destroy()
  }

  restore(): void {
    this.#cut = false
  }

  close(): void {
    this.cut()
    this.server.close()
  }

  #relay(client: Socket, targetPort: number): void {
    if (this.#cut) {
      client.destroy()
      return
    }
    const upstream = connect(targetPort, '127.0.0.1')
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        this.#sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  }
}
