import { NodeHttpHandler, type NodeHttpHandlerOptions } from '@smithy/node-http-handler'

/** Requests whose body is larger than this are sent without the idle timeout (see below). */
export const IDLE_TIMEOUT_MAX_BODY_BYTES = 1024 * 1024

type Request = Parameters<NodeHttpHandler['handle']>[0]

/**
 * The AWS SDK's Node handler, with `socketTimeout` (silence on the socket) only for requests
 * whose body is at most `IDLE_TIMEOUT_MAX_BODY_BYTES`. Node counts a socket idle while one large
 * write drains (a snapshot upload is one write), so a big save on a slow link would time out with
 * bytes still moving, and again on every retry; those rely on `requestTimeout` alone. Small
 * requests (reads, heads, deletions, most saves, every DynamoDB call) fail after the silence.
 */
export class IdleTimeoutHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' }
  readonly #small: NodeHttpHandler
  readonly #large: NodeHttpHandler

  constructor(options: NodeHttpHandlerOptions & { socketTimeout: number }) {
    const { socketTimeout, ...withoutIdle } = options
    this.#small = new NodeHttpHandler(options)
    this.#large = new NodeHttpHandler(withoutIdle)
  }

  handle(request: Request, options?: Parameters<NodeHttpHandler['handle']>[1]) {
    return (bodyBytes(request) > IDLE_TIMEOUT_MAX_BODY_BYTES ? this.#large : this.#small).handle(
      request,
      options,
    )
  }

  updateHttpClientConfig(key: keyof NodeHttpHandlerOptions, value: NodeHttpHandlerOptions[typeof key]): void {
    this.#small.updateHttpClientConfig(key, value)
    if (key !== 'socketTimeout') this.#large.updateHttpClientConfig(key, value)
  }

  httpHandlerConfigs(): NodeHttpHandlerOptions {
    return this.#small.httpHandlerConfigs()
  }

  destroy(): void {
    this.#small.destroy()
    this.#large.destroy()
  }
}

/** The body's length as sent; a stream of unknown length counts as large. */
function bodyBytes(request: Request): number {
  const body: unknown = request.body
  if (body === undefined || body === null || body === '') return 0
  if (typeof body === 'string') return Buffer.byteLength(body)
  if (body instanceof Uint8Array) return body.byteLength
  const declared = Number(request.headers['content-length'] ?? request.headers['Content-Length'])
  return Number.isFinite(declared) ? declared : Number.POSITIVE_INFINITY
}
