/** Types for round-robin-proxy.mjs, so TypeScript tests can put the proxy in front of servers. */
export interface ProxyTarget {
  host: string
  port: number
}
export interface RoundRobinProxy {
  /** The port it listens on (the one picked when asked for 0). */
  port: number
  /** Stops listening and drops every connection it holds. */
  close(): Promise<void>
}
export function startRoundRobinProxy(options: {
  port: number
  host?: string
  targets: ProxyTarget[]
}): Promise<RoundRobinProxy>
