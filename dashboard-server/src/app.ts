import { createHash, timingSafeEqual } from 'node:crypto'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isValidRoomName, ROOM_NAME_RULE } from '@symphony/client/wire'
import express, { type NextFunction, type Request, type Response } from 'express'
import helmet from 'helmet'
import { type Logger, pino } from 'pino'
import { z } from 'zod'
import { ApiError } from './app-error.js'
import type { LiveEvents } from './live-events.js'
import { DashboardMetrics } from './metrics.js'
import { type MetadataQueries, ROOM_SORTS } from './queries.js'
import { type AllowedHosts, checkHost, refuseCrossSite } from './request-guards.js'
import { deleteRoom, readRoomState, type SnapshotReader } from './room-state.js'
import { listVersions, readVersion, restoreVersion, type VersionReader } from './room-versions.js'
import { Sessions } from './sessions.js'

export interface DashboardDeps {
  queries: MetadataQueries
  events: LiveEvents
  /** Bearer token every /api request must carry; null: open (development only). */
  token: string | null
  /**
   * `Host` names answered besides loopback ones (`DASHBOARD_ALLOWED_HOSTS`). Default: any with a
   * token (a rebinding page has neither it nor the session cookie); without one, loopback only.
   */
  allowedHosts?: AllowedHosts
  /** How long a sign-in on the page lasts. */
  sessionTtlMs: number
  /** The sync servers' INTERNAL_TOKEN, to read live rooms; null: room state unavailable. */
  internalToken: string | null
  /** Where the sync servers save rooms: read for rooms no server holds now, and for their versions. */
  snapshots: SnapshotReader & VersionReader
  /** The dashboard's Prometheus metrics; a fresh set when unset. */
  metrics?: DashboardMetrics
  /** Where failures are logged; silent when unset. */
  logger?: Logger
}

const roomListQuery = z.object({
  q: z.string().max(128).default(''),
  sort: z.enum(ROOM_SORTS).default('lastActive'),
  order: z.enum(['asc', 'desc']).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).default(0),
})

const versionListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  cursor: z.string().max(256).nullable().default(null),
})

/** A time as an ISO 8601 string or milliseconds since 1970. */
const instant = z
  .string()
  .transform((v) => new Date(/^\d+$/.test(v) ? Number(v) : v))
  .refine((d) => !Number.isNaN(d.getTime()), 'must be an ISO 8601 time or milliseconds since 1970')

/** The longest range one samples request may cover (retention keeps 30 days by default). */
const MAX_SAMPLE_RANGE_MS = 31 * 86_400_000

const samplesQuery = z
  .object({ since: instant.optional(), until: instant.optional() })
  .transform(({ since, until }) => {
    const end = until ?? new Date()
    return { since: since ?? new Date(end.getTime() - 3_600_000), until: end }
  })
  .refine(({ since, until }) => since < until, 'since must be before until')
  .refine(
    ({ since, until }) => until.getTime() - since.getTime() <= MAX_SAMPLE_RANGE_MS,
    'at most 31 days at once',
  )

/** The dashboard's HTTP API: metadata for operators, behind a bearer token. */
export function createDashboardApp(deps: DashboardDeps): express.Express {
  const app = express()
  app.disable('x-powered-by')
  // Behind the load balancer, `request.secure` follows its X-Forwarded-Proto (one hop). A client
  // that reaches the task directly can only mark its own cookie Secure by sending it.
  app.set('trust proxy', 1)
  const sessions = deps.token ? new Sessions(deps.token, deps.sessionTtlMs) : null
  const metrics =
    deps.metrics ?? new DashboardMetrics({ version: VERSION, sseClients: () => deps.events.clientCount })
  app.use(countRequests(metrics))
  // helmet's CSP would upgrade every request to https, breaking a dashboard served over plain
  // HTTP on a private address; TLS, where used, is the load balancer's job. Referrer-Policy
  // same-origin (not helmet's no-referrer): the page's own form posts then carry its Origin, which
  // `refuseCrossSite` checks; other sites still learn nothing.
  app.use(
    helmet({
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
      referrerPolicy: { policy: 'same-origin' },
    }),
  )
  // For the load balancer: the process answers. Not the database: an outage there shows as 503s on
  // the API, and replacing every dashboard task would not fix it.
  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' })
  })
  // Below /healthz: the load balancer's checks name the task's address.
  app.use(checkHost(deps.allowedHosts ?? (deps.token ? 'any' : [])))
  app.use(refuseCrossSite())
  // For Prometheus (the ADOT sidecar scrapes localhost inside the task): loopback callers, or
  // anyone with the dashboard token. Others get a 404, so the load balancer never shows it.
  app.get('/metrics', async (request, response) => {
    if (!isLoopback(request.socket.remoteAddress) && !hasToken(request, deps.token)) {
      throw new ApiError(404, 'NOT_FOUND', 'no such route')
    }
    response.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
  // The page itself is public (it shows the sign-in form); everything under /api needs the token.
  app.use(express.static(PUBLIC_FOLDER, { index: 'index.html' }))
  // The chart library, from the installed uplot package (no copy to keep in step).
  for (const file of ['uPlot.esm.js', 'uPlot.min.css']) {
    app.get(`/vendor/${file}`, (_request, response) => {
      response.sendFile(join(UPLOT_FOLDER, file), { maxAge: '1h' })
    })
  }
  app.post('/login', express.urlencoded({ extended: false, limit: '4kb' }), (request, response) => {
    const token = typeof request.body?.token === 'string' ? request.body.token : ''
    if (!deps.token || !sessions) {
      response.redirect(303, './') // an open dashboard has nothing to sign in to
      return
    }
    if (!sameSecret(token, deps.token)) {
      response.redirect(303, './?login=failed')
      return
    }
    const session = sessions.create()
    // HttpOnly: page scripts never see it; SameSite=Strict: other sites cannot ride on it;
    // Secure whenever the page came over HTTPS (directly or through the load balancer).
    response.cookie(SESSION_COOKIE, session.value, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: request.secure,
      maxAge: session.maxAgeMs,
    })
    response.redirect(303, './')
  })
  app.post('/logout', (request, response) => {
    response.clearCookie(SESSION_COOKIE, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: request.secure,
    })
    response.redirect(303, './')
  })
  app.use('/api', requireToken(deps.token, sessions))

  app.get('/api/servers', async (_request, response) => {
    response.json({ servers: await deps.queries.servers() })
  })
  app.get('/api/servers/samples', async (request, response) => {
    response.json(await deps.queries.serverSamples(parse(samplesQuery, request.query)))
  })
  app.get('/api/rooms', async (request, response) => {
    response.json(await deps.queries.rooms(parse(roomListQuery, request.query)))
  })
  app.get('/api/rooms/:room', async (request, response) => {
    const room = await deps.queries.room(roomParam(request))
    if (!room) throw new ApiError(404, 'ROOM_NOT_FOUND', `no room "${request.params.room}" has been seen`)
    response.json(room)
  })
  app.get('/api/rooms/:room/state', async (request, response) => {
    const room = roomParam(request)
    const { source, document } = await readRoomState(room, await deps.queries.liveHolders(room), deps)
    response.set('Symphony-Source', source).json(document)
  })
  app.delete('/api/rooms/:room', async (request, response) => {
    const room = roomParam(request)
    const token = requireInternalToken(deps.internalToken, 'deleting')
    await deleteRoom(room, await syncServersFor(room, deps.queries), token)
    response.status(204).end()
  })
  app.get('/api/rooms/:room/versions', async (request, response) => {
    response.json(
      await listVersions(deps.snapshots, roomParam(request), parse(versionListQuery, request.query)),
    )
  })
  app.get('/api/rooms/:room/versions/:id', async (request, response) => {
    response.json(await readVersion(deps.snapshots, roomParam(request), String(request.params.id)))
  })
  // Restoring changes the live room for everyone in it: a sync server does it (the page asks first).
  app.post('/api/rooms/:room/versions/:id/restore', async (request, response) => {
    const room = roomParam(request)
    const { status, body } = await restoreVersion(
      room,
      String(request.params.id),
      await syncServersFor(room, deps.queries),
      requireInternalToken(deps.internalToken, 'restoring'),
    )
    response.status(status).json(body)
  })
  app.get('/api/stats', async (_request, response) => {
    response.json(await deps.queries.stats())
  })
  app.get('/api/events', (_request, response) => deps.events.subscribe(response))
  app.use('/api', () => {
    throw new ApiError(404, 'NOT_FOUND', 'no such API route')
  })
  app.use(errorHandler(deps.logger ?? pino({ level: 'silent' })))
  return app
}

/** Servers holding `room` first; then any live one (the stores are shared, any can act on it). */
async function syncServersFor(room: string, queries: MetadataQueries): Promise<string[]> {
  const holders = await queries.liveHolders(room)
  return [...new Set([...holders, ...(await queries.liveServers())])]
}

/** The sync servers' INTERNAL_TOKEN, or a 503 naming what needs it. */
function requireInternalToken(token: string | null, doing: 'deleting' | 'restoring'): string {
  if (token) return token
  const code = doing === 'deleting' ? 'DELETE_UNAVAILABLE' : 'RESTORE_UNAVAILABLE'
  throw new ApiError(503, code, `${doing} needs INTERNAL_TOKEN, shared with the sync servers`)
}

/** A query string checked against `schema`; 400 BAD_QUERY naming the first problem. */
function parse<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const path = issue?.path.join('.')
    throw new ApiError(400, 'BAD_QUERY', `${path ? `${path}: ` : ''}${issue?.message}`)
  }
  return parsed.data
}

/** Counts every answer by the route that matched (never the raw path: room names would explode it). */
function countRequests(metrics: DashboardMetrics) {
  return (request: Request, response: Response, next: NextFunction) => {
    const stop = metrics.httpDuration.startTimer()
    const done = () => {
      const route =
        (request.route?.path as string | undefined) ??
        (request.path.startsWith('/api') ? 'unmatched' : 'static')
      stop({ route })
      metrics.httpRequests.inc({ route, method: request.method, status: String(response.statusCode) })
    }
    // Counted once: when the answer finishes, or when the connection closes first (an event stream).
    response.once('finish', done)
    response.once('close', () => {
      if (!response.writableFinished) done()
    })
    next()
  }
}

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1'
}

function roomParam(request: Request): string {
  const room = String(request.params.room)
  if (!isValidRoomName(room)) throw new ApiError(400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
  return room
}

/** Where the page's files are: `public/` beside `src/` and `dist/`. */
const PUBLIC_FOLDER = fileURLToPath(new URL('../public/', import.meta.url))
const require = createRequire(import.meta.url)
/** uPlot's built files, wherever npm installed the package. */
const UPLOT_FOLDER = dirname(require.resolve('uplot'))
const VERSION = (require('../package.json') as { version: string }).version
/** Set by the sign-in form; lets the page (and its EventSource, which cannot send headers) in. */
const SESSION_COOKIE = 'symphony_dashboard'

/**
 * Constant-time comparison of digests, so response times tell nothing about the token: neither
 * its bytes nor its length.
 */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

/** The API takes the token (scripts, curl) or a session from the page's sign-in. */
function requireToken(token: string | null, sessions: Sessions | null) {
  return (request: Request, _response: Response, next: NextFunction) => {
    if (!token || !sessions) return next()
    if (hasToken(request, token) || sessions.isValid(cookie(request, SESSION_COOKIE))) return next()
    next(
      new ApiError(
        401,
        'UNAUTHORIZED',
        'send Authorization: Bearer <DASHBOARD_TOKEN>, or sign in on the page (sessions expire)',
      ),
    )
  }
}

/** Whether the request carries `Authorization: Bearer <token>` (never true without a token). */
function hasToken(request: Request, token: string | null): boolean {
  if (!token) return false
  const header = request.get('authorization') ?? ''
  return sameSecret(header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '', token)
}

function cookie(request: Request, name: string): string {
  for (const part of (request.get('cookie') ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return decodeURIComponent(value.join('='))
  }
  return ''
}

/** Postgres's SQLSTATE for "relation does not exist". */
const UNDEFINED_TABLE = '42P01'

/** Answers a failed request: the refusal's own code, else a 500 whose cause goes to the log. */
const errorHandler =
  (logger: Logger) =>
  (error: unknown, request: Request, response: Response, _next: NextFunction): void => {
    if (error instanceof ApiError) {
      response.status(error.status).json({ error: { code: error.code, message: error.message } })
      return
    }
    if ((error as { code?: string }).code === UNDEFINED_TABLE) {
      // The sync servers create the schema on first contact; none has reached this database yet.
      response.status(503).json({
        error: {
          code: 'NO_METADATA_YET',
          message: 'no sync server has written metadata to this database yet',
        },
      })
      return
    }
    const status = (error as { status?: number }).status
    if (status && status >= 400 && status < 500) {
      // express's own refusals (e.g. malformed URL encoding).
      response.status(status).json({ error: { code: 'BAD_REQUEST', message: (error as Error).message } })
      return
    }
    logger.error({ err: error, path: request.path }, 'request failed')
    response.status(500).json({ error: { code: 'INTERNAL', message: 'the dashboard failed; see its log' } })
  }
