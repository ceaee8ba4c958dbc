import type { ClientRequestArgs } from 'node:http'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

export interface ConnectTimeoutAgentOptions {
  /** Sockets open at once per host; more requests wait for one (without a deadline of their own). */
  maxSockets: number
  /** The longest a new TCP connection may take to open; then it fails with ETIMEDOUT (retried). */
  connectTimeoutMs: number
}

/** Destroys `socket` with ETIMEDOUT unless its TCP connection opens within `ms`. */
function armConnectTimeout(socket: Duplex | null | undefined, ms: number): void {
  const tcp = socket as Socket | null | undefined
  if (!tcp?.connecting) return
  const timer = setTimeout(() => {
    const error = Object.assign(new Error(`no TCP connection within ${ms} ms`), { code: 'ETIMEDOUT' })
    tcp.destroy(error)
  }, ms)
  const clear = () => clearTimeout(timer)
  tcp.once('connect', clear)
  tcp.once('close', clear)
}

class HttpConnectTimeoutAgent extends HttpAgent {
  constructor(
    private readonly connectTimeoutMs: number,
    maxSockets: number,
  ) {
    super({ keepAlive: true, maxSockets })
  }
  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback)
    armConnectTimeout(socket, this.connectTimeoutMs)
    return socket
  }
}

class HttpsConnectTimeoutAgent extends HttpsAgent {
  constructor(
    private readonly connectTimeoutMs: number,
    maxSockets: number,
  ) {
    super({ keepAlive: true, maxSockets })
  }
  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback)
    armConnectTimeout(socket, this.connectTimeoutMs)
    return socket
  }
}

/**
 * Keep-alive agents (plain and TLS) whose connect timeout covers the TCP connect only, never the
 * time a request queues for a free socket: a burst of requests is a wait, not a failure.
 */
export function connectTimeoutAgents({ maxSockets, connectTimeoutMs }: ConnectTimeoutAgentOptions): {
  httpAgent: HttpAgent
  httpsAgent: HttpsAgent
} {
  return {
    httpAgent: new HttpConnectTimeoutAgent(connectTimeoutMs, maxSockets),
    httpsAgent: new HttpsConnectTimeoutAgent(connectTimeoutMs, maxSockets),
  }
}
