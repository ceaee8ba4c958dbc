import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A JWKS endpoint on a free port; `beforeAnswer` can hold each answer back, or return a status
 * to answer with instead of the key set (an identity provider's outage).
 */
export async function serveJwks(jwk: object, beforeAnswer: () => Promise<unknown> = async () => undefined) {
  const server = createServer(async (request, response) => {
    const status = await beforeAnswer()
    if (status === 'hang-up') {
      request.socket.destroy()
      return
    }
    if (typeof status === 'number') {
      response.writeHead(status).end('unavailable')
      return
    }
    response.writeHead(200, { 'Content-Type': 'application/json' })
    response.end(JSON.stringify({ keys: [jwk] }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}
