import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'

/** Answers an upgrade request with a plain HTTP error and closes the socket. */
export function refuseUpgrade(socket: Duplex, status: number, code: string, message: string): void {
  if (socket.destroyed) return
  const body = JSON.stringify({ error: { code, message } })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Connection: close\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
}
