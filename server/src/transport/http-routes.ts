import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ServerMetrics } from '../metrics.js'
import { parseRequestTarget } from './request-target.js'
import type { StaticFile } from './static-files.js'

export interface Health {
  ready: boolean
  serverId: string
  rooms: number
  connections: number
  uptimeSeconds: number
}

export interface RouteDeps {
  metrics: ServerMetrics
  health: () => Health
  staticFiles: Map<string, StaticFile>
}

/** The public HTTP side of the sync server: health, metrics and the demo page. */
export function createRequestHandler(deps: RouteDeps) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const { path } = parseRequestTarget(request.url)
    const file = deps.staticFiles.get(path)
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      sendError(response, 405, 'METHOD_NOT_ALLOWED', 'only GET and HEAD are served here')
    } else if (path === '/healthz') {
      const health = deps.health()
      sendJson(response, health.ready ? 200 : 503, { status: health.ready ? 'ok' : 'draining', ...health })
    } else if (path === '/metrics') {
      deps.metrics.registry.metrics().then(
        (text) => send(response, 200, deps.metrics.registry.contentType, text),
        (error: Error) => sendError(response, 500, 'METRICS_FAILED', error.message),
      )
    } else if (file) {
      send(response, 200, file.contentType, file.body)
    } else {
      sendError(response, 404, 'NOT_FOUND', 'nothing here; WebSocket clients connect to /<room>')
    }
  }
}

function sendError(response: ServerResponse, status: number, code: string, message: string): void {
  sendJson(response, status, { error: { code, message } })
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json', JSON.stringify(body))
}

function send(response: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
  response.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-cache' })
  response.end(body)
}
