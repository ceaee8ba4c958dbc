import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  isValidRoomName,
  parseAccessCheckPath,
  ROOM_NAME_RULE,
  type ServerErrorCode,
  type ServerErrorStatus,
} from '@symphony/client/wire'
import type { Authenticator } from '../auth/authenticator.js'
import { requestToken } from '../auth/request-token.js'
import type { DependencyState } from '../dependency-health.js'
import { AUTH_FAILED, httpAnswer } from '../error-answers.js'
import type { ServerMetrics } from '../metrics.js'
import { answerDevToken, DEV_TOKEN_PATH } from './dev-token-route.js'
import { parseRequestTarget } from './request-target.js'
import type { ApiHandler } from './rest-api.js'
import type { StaticFile } from './static-files.js'

export interface Health {
  ready: boolean
  serverId: string
  rooms: number
  connections: number
  uptimeSeconds: number
  /** Each dependency's latest outcome; a failing one makes the status 'degraded', still 200. */
  dependencies: Record<string, DependencyState>
}

export interface RouteDeps {
  metrics: ServerMetrics
  health: () => Health
  staticFiles: Map<string, StaticFile>
  authenticator: Authenticator
  /** The HS256 secret the development token route signs with; null: the route is off. */
  devTokenSecret: string | null
  /** The REST API under `/api/`, or null when `API_SECRET` is unset (its routes answer 404). */
  api: ApiHandler | null
}

/** The public HTTP side of the sync server: health, metrics, access checks and the demo page. */
export function createRequestHandler(deps: RouteDeps) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const { path, query } = parseRequestTarget(request.url)
    const file = deps.staticFiles.get(path)
    // HTTP only: an access-check path never shadows a room's WebSocket path.
    const accessRoom = parseAccessCheckPath(path)?.room
    if (path.startsWith('/api/')) {
      if (deps.api) deps.api(request, response, path, query)
      else sendError(response, 404, 'NOT_FOUND', 'the REST API is off: set API_SECRET to turn it on')
    } else if (request.method === 'OPTIONS' && accessRoom !== undefined) {
      answerAccessPreflight(response)
    } else if (request.method !== 'GET' && request.method !== 'HEAD') {
      sendError(response, 405, 'METHOD_NOT_ALLOWED', 'only GET and HEAD are served here')
    } else if (accessRoom !== undefined) {
      answerAccessCheck(deps.authenticator, accessRoom, request, query, response)
    } else if (path === DEV_TOKEN_PATH && deps.devTokenSecret) {
      answerDevToken(deps.devTokenSecret, query).then(
        ({ status, body }) => sendJson(response, status, body),
        (error: Error) => sendError(response, 500, 'TOKEN_FAILED', error.message),
      )
    } else if (path === '/healthz') {
      // 503 only while not ready (draining): a failing dependency (Redis, DynamoDB…) fails every
      // server at once, and the load balancer replacing them all would turn an outage into a cascade.
      const health = deps.health()
      const degraded = Object.values(health.dependencies).some((dependency) => !dependency.ok)
      const status = !health.ready ? 'draining' : degraded ? 'degraded' : 'ok'
      sendJson(response, health.ready ? 200 : 503, { status, ...health })
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

/**
 * Lets a page on any origin send the access check its token in `Authorization` (a header that
 * makes the browser ask first).
 */
function answerAccessPreflight(response: ServerResponse): void {
  response.writeHead(204, {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, HEAD',
    'Access-Control-Allow-Headers': 'Authorization',
    'Access-Control-Max-Age': '600',
  })
  response.end()
}

/**
 * Tells a client whether its token opens a room, with the reason when not. Browsers cannot read
 * the HTTP status of a refused WebSocket upgrade, so the client library asks here before deciding
 * between "retry later" and "stop and report". The token comes in `Authorization: Bearer`
 * (kept out of access logs) or `?token=`, not both. Open to any origin: it reveals nothing the
 * upgrade itself does not.
 */
function answerAccessCheck(
  authenticator: Authenticator,
  room: string | null,
  request: IncomingMessage,
  query: URLSearchParams,
  response: ServerResponse,
): void {
  response.setHeader('Access-Control-Allow-Origin', '*')
  if (!isValidRoomName(room)) {
    sendError(response, 400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
    return
  }
  Promise.resolve()
    .then(() => authenticator.authenticate(requestToken(request.headers, query), room))
    .then(
      (identity) => sendJson(response, 200, { room, access: identity.access, userId: identity.userId }),
      (error: unknown) => {
        const answer = httpAnswer(error, AUTH_FAILED)
        if (answer.retryAfterSeconds !== undefined) {
          response.setHeader('Retry-After', String(answer.retryAfterSeconds))
        }
        sendError(response, answer.status, answer.code, answer.message)
      },
    )
}

function sendError<C extends ServerErrorCode>(
  response: ServerResponse,
  status: ServerErrorStatus<C>,
  code: C,
  message: string,
): void {
  sendJson(response, status, { error: { code, message } })
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json', JSON.stringify(body))
}

function send(response: ServerResponse, status: number, contentType: string, body: string | Buffer): void {
  response.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-cache' })
  response.end(body)
}
