import { connect, createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'

type Mode =
  | { kind: 'open' }
  | { kind: 'blackhole' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'throttled'; bytesPerSecond: number }
  | { kind: 'reset-after-accept' }

/**
 * A TCP relay that a test can cut, hang or slow down and restore, to partition one server from
 * Redis (or S3, DynamoDB) while the others keep talking to it.
 */
export class TcpLink {
  readonly #sockets = new Set<Socket>()
  /** Pairs relayed while the link was a black hole: their bytes are dropped for good. */
  readonly #hung = new WeakSet<Socket>()
  #cut = false
  #mode: Mode = { kind: 'open' }
  /** Connections accepted so far (reset ones included), for a test that waits for retries. */
  accepted = 0
  /** Chunks a black hole swallowed so far, for a test that waits until a request is lost. */
  dropped = 0
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** `tls`: clients speak TLS to the link (certificate and key in PEM), which speaks plain TCP on. */
  static async open(targetPort: number, tls?: { cert: string; key: string }): Promise<TcpLink> {
    let link: TcpLink | null = null
    const accept = (client: Socket) => {
      if (link) link.#relay(client, targetPort)
      else client.destroy()
    }
    const server = tls ? createTlsServer(tls, accept) : createServer(accept)
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

  /**
   * A half-open link: connections stay open (and new ones are accepted) but no byte gets through
   * either way. The connections hung now stay hung after `restore`, as when the far end is gone:
   * only the endpoints' own timeouts or heartbeats can tell.
   */
  blackhole(): void {
    this.#mode = { kind: 'blackhole' }
    for (const socket of this.#sockets) this.#hung.add(socket)
  }

  /**
   * Carries at most `bytesPerSecond` each way: the sender's socket fills and waits, as on a thin
   * link (where `slow` only delays what it takes at once).
   */
  throttle(bytesPerSecond: number): void {
    this.#mode = { kind: 'throttled', bytesPerSecond }
  }

  /** Every chunk, either way, arrives `delayMs` late (in order). */
  slow(delayMs: number): void {
    this.#mode = { kind: 'slow', delayMs }
  }

  /**
   * New connections are accepted, then reset as soon as the client has sent its first bytes (a
   * Redis at `maxclients`, a proxy in front of a dead node), again and again until `restore`;
   * open ones keep relaying (`cut` first to drop them).
   */
  resetAfterAccept(): void {
    this.#cut = false
    this.#mode = { kind: 'reset-after-accept' }
  }

  /** New connections pass again, at full speed; connections hung by `blackhole` stay hung. */
  restore(): void {
    this.#cut = false
    this.#mode = { kind: 'open' }
  }

  close(): void {
    this.cut()
    this.server.close()
  }

  #relay(client: Socket, targetPort: number): void {
    this.accepted++
    if (this.#cut) {
      client.destroy()
      return
    }
    if (this.#mode.kind === 'reset-after-accept') {
      // Once the client has spoken (its handshake sent, so it counts itself connected), or soon.
      client.on('error', () => {})
      const reset = () => client.destroyed || client.resetAndDestroy()
      client.once('data', reset)
      setTimeout(reset, 50).unref()
      return
    }
    const upstream = connect(targetPort, '127.0.0.1')
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket)
      if (this.#mode.kind === 'blackhole') this.#hung.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => this.#sockets.delete(socket))
    }
    this.#forward(client, upstream)
    this.#forward(upstream, client)
  }

  /**
   * Relays `from` to `to` through the link's mode, keeping the order of the chunks. When `from`
   * closes, `to` is closed after the chunks still delayed (an HTTP answer followed by a close
   * arrives whole, only late); a link cut or hung drops them.
   */
  #forward(from: Socket, to: Socket): void {
    const queue: { at: number; chunk: Buffer | null }[] = []
    let timer: NodeJS.Timeout | null = null
    const pass = (chunk: Buffer | null) => {
      if (chunk) to.write(chunk)
      else to.end(() => to.destroy())
    }
    const drain = () => {
      timer = null
      while (queue.length > 0 && (queue[0]?.at ?? 0) <= performance.now()) pass(queue.shift()?.chunk ?? null)
      const next = queue[0]
      if (next) timer = setTimeout(drain, Math.max(0, next.at - performance.now()))
    }
    from.on('data', (chunk: Buffer) => {
      if (this.#hung.has(from) || this.#mode.kind === 'blackhole') {
        this.dropped++
        return
      }
      if (this.#mode.kind === 'throttled') {
        to.write(chunk)
        from.pause()
        setTimeout(() => from.resume(), (chunk.length / this.#mode.bytesPerSecond) * 1000)
        return
      }
      const delayMs = this.#mode.kind === 'slow' ? this.#mode.delayMs : 0
      if (delayMs === 0 && queue.length === 0) {
        to.write(chunk)
        return
      }
      queue.push({ at: performance.now() + delayMs, chunk })
      timer ??= setTimeout(drain, delayMs)
    })
    from.on('close', () => {
      if (this.#cut || this.#hung.has(from) || queue.length === 0) {
        if (timer) clearTimeout(timer)
        to.destroy()
        return
      }
      queue.push({ at: queue.at(-1)?.at ?? performance.now(), chunk: null })
    })
  }
}
