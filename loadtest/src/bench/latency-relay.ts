import { connect, createServer, type Socket } from 'node:net'

/** A TCP relay on loopback in front of a real service, delaying every chunk either way. */
export interface LatencyRelay {
  port: number
  /** From now on every chunk, either way, arrives `ms` late (in order); 0: at once. */
  setDelay(ms: number): void
  /** From now on no byte gets through either way, on open connections or new ones (a partition). */
  blackhole(): void
  close(): Promise<void>
}

/**
 * Opens a relay to `127.0.0.1:targetPort` that adds `delayMs` to every chunk in each direction,
 * keeping their order: a slow dependency (S3, DynamoDB, Redis) without mocking its client.
 */
export async function startLatencyRelay(targetPort: number, delayMs: number): Promise<LatencyRelay> {
  let delay = delayMs
  let dropped = false
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1')
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => sockets.delete(socket))
    }
    const delayOf = () => (dropped ? null : delay)
    forward(client, upstream, delayOf)
    forward(upstream, client, delayOf)
  })
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  )
  return {
    port,
    setDelay: (ms) => {
      delay = ms
    },
    blackhole: () => {
      dropped = true
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/**
 * Relays `from` to `to`, each chunk `delayOf()` late and in order (null: dropped). The end of `from` is passed on
 * as late as its last chunk, so an answer followed by a close (HTTP/1.0 style) still arrives whole.
 */
function forward(from: Socket, to: Socket, delayOf: () => number | null): void {
  const queue: { at: number; chunk: Buffer | null }[] = []
  let timer: NodeJS.Timeout | null = null
  const pass = (chunk: Buffer | null) => {
    if (chunk) to.write(chunk)
    else to.end()
  }
  const drain = () => {
    timer = null
    while (queue.length > 0 && (queue[0]?.at ?? 0) <= performance.now()) pass(queue.shift()?.chunk ?? null)
    const next = queue[0]
    if (next) timer = setTimeout(drain, Math.max(0, next.at - performance.now()))
  }
  const later = (chunk: Buffer | null) => {
    const delay = delayOf()
    if (delay === null) return // dropped: a black hole
    if (delay === 0 && queue.length === 0) return pass(chunk)
    queue.push({ at: performance.now() + delay, chunk })
    timer ??= setTimeout(drain, delay)
  }
  from.on('data', (chunk: Buffer) => later(chunk))
  from.on('end', () => later(null))
  // A reset (no orderly end) resets the other side too, at once.
  from.on('close', (hadError) => {
    if (!hadError) return
    if (timer) clearTimeout(timer)
    to.destroy()
  })
}
