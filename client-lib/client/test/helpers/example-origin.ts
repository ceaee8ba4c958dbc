// The origin an example's browser pages are served from, in front of the example's backend.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'

/** A POST the origin passed to the backend, with the answer (the webhook check reads these). */
export interface Delivery {
  path: string
  headers: IncomingHttpHeaders
  body: Buffer
  status: number
}

export type ExampleOrigin = Awaited<ReturnType<typeof startOrigin>>

/**
 * The app's origin, as a browser sees it: the page at `/`, its script at `/example.js`, and every
 * other path passed to the example's backend (its routes, and the webhooks, which it records).
 */
export async function startOrigin() {
  const state = { html: '', script: '', backend: null as string | null, deliveries: [] as Delivery[] }
  const server: Server = createServer(async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://origin').pathname
    if (request.method === 'GET' && (path === '/' || path === '/example.js')) {
      const [type, body] = path === '/' ? ['text/html', state.html] : ['text/javascript', state.script]
      response.writeHead(200, { 'Content-Type': type }).end(body)
      return
    }
    if (!state.backend) {
      response.writeHead(404).end()
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(
        ([name]) => !['host', 'connection', 'content-length'].includes(name),
      ),
    ) as Record<string, string>
    try {
      const answer = await fetch(`${state.backend}${request.url}`, {
        method: request.method ?? 'GET',
        headers,
        ...(body.length > 0 ? { body: new Blob([new Uint8Array(body)]) } : {}),
      })
      if (request.method === 'POST')
        state.deliveries.push({ path, headers: request.headers, body, status: answer.status })
      const type = answer.headers.get('content-type')
      response.writeHead(answer.status, type ? { 'Content-Type': type } : {})
      response.end(Buffer.from(await answer.arrayBuffer()))
    } catch (error) {
      response.writeHead(502).end(String(error))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  return {
    url,
    state,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}
