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

/** `agent`, its new TCP connections given `connectTimeoutMs` to open. */
function withConnectTimeout<A extends HttpAgent>(agent: A, connectTimeoutMs: number): A {
  const create = agent.createConnection.bind(agent)
  agent.createConnection = (options, callback) => {
    const socket = create(options, callback)
    armConnectTimeout(socket, connectTimeoutMs)
    return socket
  }
  return agent
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
    httpAgent: withConnectTimeout(new HttpAgent({ keepAlive: true, maxSockets }), connectTimeoutMs),
    httpsAgent: withConnectTimeout(new HttpsAgent({ keepAlive: true, maxSockets }), connectTimeoutMs),
  }
}
