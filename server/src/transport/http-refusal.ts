import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ServerErrorCode, ServerErrorStatus } from '@symphony/client/wire'

/**
 * Answers an upgrade request with a plain HTTP error and closes the socket; `retryAfterSeconds`
 * adds a `Retry-After` header (a 503 the client should retry).
 */
export function refuseUpgrade<C extends ServerErrorCode>(
  socket: Duplex,
  status: ServerErrorStatus<C>,
  code: C,
  message: string,
  retryAfterSeconds?: number,
): void {
  if (socket.destroyed) return
  const body = JSON.stringify({ error: { code, message } })
  const retryAfter = retryAfterSeconds === undefined ? '' : `Retry-After: ${retryAfterSeconds}\r\n`
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Connection: close\r\nContent-Type: application/json\r\n${retryAfter}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
}
