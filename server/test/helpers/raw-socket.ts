import WebSocket from 'ws'

/**
 * Raw sockets for the hostile-input and limit tests only: they send bytes no real client would.
 */
const openSockets = new Set<WebSocket>()

/** Terminates every raw socket the test opened (use in `afterEach`). */
export function terminateRawSockets(): void {
  for (const socket of openSockets) socket.terminate()
  openSockets.clear()
}

export function openRaw(url: string, options: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options)
    openSockets.add(socket)
    socket.binaryType = 'nodebuffer'
    socket.once('open', () => resolve(socket))
    socket.once('error', reject)
  })
}

export interface CloseEvent {
  code: number
  reason: string
}

export function closed(socket: WebSocket): Promise<CloseEvent> {
  if (socket.readyState === WebSocket.CLOSED) throw new Error('socket already closed')
  return new Promise((resolve) => {
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
}

/** The HTTP status an upgrade request was refused with (throws if it was accepted). */
export function refusedStatus(
  url: string,
  options: WebSocket.ClientOptions = {},
): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options)
    socket.once('open', () => {
      socket.close()
      reject(new Error(`upgrade to ${url} was accepted`))
    })
    socket.once('unexpected-response', (_request, response) => {
      let body = ''
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString()
      })
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body, retryAfter: response.headers['retry-after'] }),
      )
    })
    socket.once('error', () => {})
  })
}

/** Collects every binary message a raw socket receives. */
export function collect(socket: WebSocket): Buffer[] {
  const messages: Buffer[] = []
  socket.on('message', (data: Buffer) => messages.push(data))
  return messages
}
