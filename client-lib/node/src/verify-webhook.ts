import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * The events a Symphony server sends to `WEBHOOK_URL` (Standard Webhooks' `{ type, timestamp,
 * data }`). A later server may send types not listed here: `verifyWebhook` returns them too, so
 * a receiver ignores the types it does not know.
 */
export type WebhookEvent =
  | {
      type: 'document.updated'
      timestamp: string
      /** Sent at most once per room per `WEBHOOK_DEBOUNCE_MS`, with the latest change's time. */
      data: { room: string; lastChangedAt: string }
    }
  | { type: 'user.joined'; timestamp: string; data: WebhookUser }
  | { type: 'user.left'; timestamp: string; data: WebhookUser }
  | { type: 'room.deleted'; timestamp: string; data: { room: string } }
  /** The room was restored to saved version `version` (`restore`, or the dashboard's Restore). */
  | { type: 'document.restored'; timestamp: string; data: { room: string; version: string } }

/** Who joined or left: the connection, and its token's `sub` and `name`. */
export interface WebhookUser {
  room: string
  /** Pairs a `user.left` with its `user.joined`. */
  connectionId: string
  userId: string
  name: string | null
}

/**
 * The request's headers: Node's `request.headers` (express, `node:http`), a Fetch `Headers`
 * (Next.js route handlers, Hono, workers), or any object of them.
 */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>

export interface VerifyWebhookOptions {
  /**
   * How far `webhook-timestamp` may be from now, either way, in seconds: a delivery recorded
   * and replayed later is refused. Default 300 (Standard Webhooks' 5 minutes). The server signs
   * every try anew, so its retries are never too old.
   */
  toleranceSeconds?: number
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number
}

export type WebhookVerificationCode =
  | 'WEBHOOK_HEADERS_MISSING'
  | 'WEBHOOK_TIMESTAMP_INVALID'
  | 'WEBHOOK_SIGNATURE_INVALID'
  | 'WEBHOOK_BODY_INVALID'

/** A delivery that is not the server's: answer it with 400 or 401, and do not act on it. */
export class WebhookVerificationError extends Error {
  constructor(
    readonly code: WebhookVerificationCode,
    message: string,
  ) {
    super(message)
    this.name = 'WebhookVerificationError'
  }
}

const DEFAULT_TOLERANCE_SECONDS = 300

/**
 * Checks a webhook delivery against `WEBHOOK_SECRET` per the Standard Webhooks specification
 * and returns its event. `body` must be the raw request body, exactly as it came (a string or
 * bytes: `express.raw()`, `await request.text()`), never parsed JSON: the signature covers the
 * bytes. Throws `WebhookVerificationError` (with a `code`) for a delivery that is not
 * authentic, and a `TypeError` for a wrong secret or body type (a bug in the receiver).
 *
 * On `node:crypto` rather than the `standardwebhooks` package: its `verify` takes neither a
 * Fetch `Headers` nor a `Uint8Array` body, and computes the HMAC in JavaScript; the check is a
 * few lines over Node's HMAC and constant-time compare, and the tests hold it to that package's
 * own signatures.
 *
 * @example
 * app.post('/webhooks/symphony', express.raw({ type: 'application/json' }), (req, res) => {
 *   const event = verifyWebhook(req.headers, req.body, process.env.WEBHOOK_SECRET)
 *   if (event.type === 'room.deleted') forget(event.data.room)
 *   res.sendStatus(204)
 * })
 */
export function verifyWebhook(
  headers: WebhookHeaders,
  body: string | Uint8Array | ArrayBuffer,
  secret: string,
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  const key = secretKey(secret)
  const bytes = bodyBytes(body)
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (id === null || timestamp === null || signatures === null) {
    throw new WebhookVerificationError(
      'WEBHOOK_HEADERS_MISSING',
      'webhook-id, webhook-timestamp and webhook-signature are all required',
    )
  }
  const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  const now = (options.now ?? Date.now)() / 1000
  if (!(Math.abs(now - seconds) <= tolerance)) {
    throw new WebhookVerificationError(
      'WEBHOOK_TIMESTAMP_INVALID',
      `webhook-timestamp must be within ${tolerance} s of now (seconds since the epoch)`,
    )
  }
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(bytes).digest()
  // Space-separated `v1,<base64>` entries (several while the sender rotates its secret).
  const matches = signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',')
    if (version !== 'v1' || !signature) return false
    const given = Buffer.from(signature, 'base64')
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
  if (!matches) {
    throw new WebhookVerificationError(
      'WEBHOOK_SIGNATURE_INVALID',
      'no webhook-signature matches the body: a wrong WEBHOOK_SECRET, or a body changed on the way (parsed and serialized again?)',
    )
  }
  return parseEvent(bytes)
}

/** The key inside `whsec_<base64>`. */
function secretKey(secret: string): Buffer {
  const base64 = typeof secret === 'string' ? /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)?.[1] : undefined
  const key = base64 ? Buffer.from(base64, 'base64') : null
  if (!key || key.length < 16) {
    throw new TypeError(
      'verifyWebhook: secret must be the WEBHOOK_SECRET, whsec_ and at least 16 bytes of base64',
    )
  }
  return key
}

function bodyBytes(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === 'string') return Buffer.from(body, 'utf8')
  if (body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  throw new TypeError(
    'verifyWebhook: body must be the raw request body (a string or bytes), not parsed JSON: with express, use express.raw({ type: "application/json" }) on this route',
  )
}

/** One header's value, whatever form the headers come in; null when absent or given twice. */
function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name)
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() !== name) continue
    if (typeof value === 'string') return value
    return value?.length === 1 ? (value[0] as string) : null
  }
  return null
}

function parseEvent(bytes: Uint8Array): WebhookEvent {
  let event: unknown
  try {
    event = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    event = null
  }
  const { type, timestamp, data } = (event ?? {}) as Record<string, unknown>
  if (
    typeof type !== 'string' ||
    typeof timestamp !== 'string' ||
    typeof data !== 'object' ||
    data === null
  ) {
    throw new WebhookVerificationError(
      'WEBHOOK_BODY_INVALID',
      'the body is not a { type, timestamp, data } event',
    )
  }
  return event as WebhookEvent
}
