import { createHash, randomUUID } from 'node:crypto'
import type { Logger } from '../../logger.js'
import type { RoomEvent, RoomEventSink } from '../../ports/room-events.js'
import { ThrottledLog } from '../../throttled-log.js'
import { signWebhook } from './standard-webhooks.js'

export interface WebhookSenderOptions {
  url: string
  /** The key of the `whsec_…` secret (see `webhookKey`). */
  key: Uint8Array
  /** `document.updated` is sent at most once per room per this many milliseconds. */
  debounceMs: number
  logger: Logger
  /**
   * Events held at most: waiting, in flight and waiting for a retry. Past it new ones are dropped
   * (and counted).
   */
  maxQueued?: number
  /** Tries per event before it is given up (logged). */
  maxAttempts?: number
  retryBaseMs?: number
  retryMaxMs?: number
  requestTimeoutMs?: number
  /** Failures, give-ups and drops are each logged at most once per this many milliseconds. */
  logIntervalMs?: number
}

interface Delivery {
  id: string
  body: string
  attempts: number
}

const DEFAULTS = {
  maxQueued: 10_000,
  maxAttempts: 10,
  retryBaseMs: 1_000,
  retryMaxMs: 300_000,
  requestTimeoutMs: 10_000,
  logIntervalMs: 10_000,
}
/** Deliveries in flight at once: a slow receiver is not hammered, and a queue still drains. */
const CONCURRENCY = 4

/**
 * Sends room events to `WEBHOOK_URL`, signed per Standard Webhooks. Never slows sync: `emit`
 * queues (bounded; overflow dropped and counted), deliveries run in the background, retried with
 * exponential backoff and jitter on failure (any answer but 2xx, or no answer). The bound covers
 * every event held, those waiting for a retry too, so a receiver that is down costs at most
 * `maxQueued` events of memory. At least once: a retry keeps its `webhook-id`, so a receiver drops
 * duplicates by id; no other event shares it, on any server, before or after a restart.
 */
export class WebhookSender implements RoomEventSink {
  readonly #options: WebhookSenderOptions & typeof DEFAULTS
  readonly #queue: Delivery[] = []
  /** Rooms whose `document.updated` waits out the debounce, with the latest change. */
  readonly #pendingUpdates = new Map<string, { at: number; timer: NodeJS.Timeout }>()
  readonly #retryTimers = new Set<NodeJS.Timeout>()
  /** Makes this process's ids its own: a restart, or another server, never repeats one. */
  readonly #bootId = randomUUID()
  readonly #failedLog: ThrottledLog
  readonly #givenUpLog: ThrottledLog
  readonly #droppedLog: ThrottledLog
  #inFlight = 0
  /** Events accepted and not yet delivered or given up: queued, in flight or waiting for a retry. */
  #held = 0
  #dropped = 0
  #closed = false

  constructor(options: WebhookSenderOptions) {
    this.#options = { ...DEFAULTS, ...options }
    const log = (level: 'warn' | 'error', message: string) =>
      new ThrottledLog({
        logger: this.#options.logger,
        level,
        message,
        intervalMs: this.#options.logIntervalMs,
      })
    this.#failedLog = log('warn', 'webhook failed')
    this.#givenUpLog = log('error', 'webhook given up')
    this.#droppedLog = log('warn', 'webhook queue full: event dropped')
  }

  emit(event: RoomEvent): void {
    if (this.#closed) return
    if (event.type === 'document.updated') {
      this.#debounceUpdate(event.room, event.at)
      return
    }
    // A change still held back goes first: receivers hear of it before they hear the room is gone.
    if (event.type === 'room.deleted') this.#flushUpdate(event.room)
    this.#enqueue(event)
  }

  stats(): { queued: number; dropped: number } {
    return { queued: this.#held, dropped: this.#dropped }
  }

  /** Sends the debounced updates now and waits (up to `timeoutMs`) for the queue to drain. */
  async close(timeoutMs = 5_000): Promise<void> {
    for (const room of [...this.#pendingUpdates.keys()]) this.#flushUpdate(room)
    this.#closed = true
    const deadline = Date.now() + timeoutMs
    while ((this.#queue.length > 0 || this.#inFlight > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    for (const timer of this.#retryTimers) clearTimeout(timer)
    this.#held -= this.#retryTimers.size
    this.#retryTimers.clear()
    for (const log of [this.#failedLog, this.#givenUpLog, this.#droppedLog]) log.flush()
  }

  #flushUpdate(room: string): void {
    const pending = this.#pendingUpdates.get(room)
    if (!pending) return
    clearTimeout(pending.timer)
    this.#pendingUpdates.delete(room)
    this.#enqueue({ type: 'document.updated', room, at: pending.at })
  }

  #debounceUpdate(room: string, at: number): void {
    const pending = this.#pendingUpdates.get(room)
    if (pending) {
      pending.at = at
      return
    }
    const timer = setTimeout(() => {
      const latest = this.#pendingUpdates.get(room)
      this.#pendingUpdates.delete(room)
      if (latest) this.#enqueue({ type: 'document.updated', room, at: latest.at })
    }, this.#options.debounceMs)
    timer.unref()
    this.#pendingUpdates.set(room, { at, timer })
  }

  #enqueue(event: RoomEvent): void {
    if (this.#held >= this.#options.maxQueued) {
      this.#dropped++
      this.#droppedLog.log({ type: event.type, room: event.room })
      return
    }
    const body = JSON.stringify(payloadOf(event))
    this.#held++
    this.#queue.push({ id: idOf(this.#bootId, event), body, attempts: 0 })
    this.#pump()
  }

  #pump(): void {
    while (this.#inFlight < CONCURRENCY && this.#queue.length > 0) {
      const delivery = this.#queue.shift() as Delivery
      this.#inFlight++
      void this.#deliver(delivery).then(
        (done) => this.#settled(done),
        () => this.#settled(true),
      )
    }
  }

  #settled(done: boolean): void {
    this.#inFlight--
    if (done) this.#held--
    this.#pump()
  }

  /** Tries a delivery once; true when it is done with (delivered or given up), false: a retry waits. */
  async #deliver(delivery: Delivery): Promise<boolean> {
    delivery.attempts++
    const timestamp = Math.floor(Date.now() / 1000)
    let failure: string
    try {
      const response = await fetch(this.#options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(this.#options.key, delivery.id, timestamp, delivery.body),
        },
        body: delivery.body,
        signal: AbortSignal.timeout(this.#options.requestTimeoutMs),
      })
      await response.body?.cancel()
      if (response.ok) return true
      failure = `answered ${response.status}`
    } catch (error) {
      failure = (error as Error).message
    }
    const { maxAttempts, retryBaseMs, retryMaxMs } = this.#options
    if (delivery.attempts >= maxAttempts || this.#closed) {
      this.#givenUpLog.log({ id: delivery.id, attempts: delivery.attempts, failure })
      return true
    }
    const ceiling = Math.min(retryMaxMs, retryBaseMs * 2 ** (delivery.attempts - 1))
    const delay = ceiling / 2 + Math.random() * (ceiling / 2)
    this.#failedLog.log({
      id: delivery.id,
      attempts: delivery.attempts,
      failure,
      retryInMs: Math.round(delay),
    })
    // Still held (and counted against the bound) while it waits: it re-enters the queue unchecked.
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer)
      this.#queue.push(delivery)
      this.#pump()
    }, delay)
    timer.unref()
    this.#retryTimers.add(timer)
    return false
  }
}

/** The body: Standard Webhooks' `{ type, timestamp, data }`. */
function payloadOf(event: RoomEvent): { type: string; timestamp: string; data: Record<string, unknown> } {
  const { type, at, ...data } = event
  const timestamp = new Date(at).toISOString()
  if (type === 'document.updated')
    return { type, timestamp, data: { room: data.room, lastChangedAt: timestamp } }
  return { type, timestamp, data }
}

/**
 * The same logical event always gets the same id: a retry, or the same event reported twice,
 * can be dropped by the receiver. The sender's random boot id keeps it from every other
 * process's events: a server restarted under the same `SERVER_ID`, or another server whose
 * change to a room came in the same millisecond.
 */
function idOf(bootId: string, event: RoomEvent): string {
  const key =
    event.type === 'user.joined' || event.type === 'user.left'
      ? `${bootId}\n${event.type}\n${event.connectionId}`
      : `${bootId}\n${event.type}\n${event.room}\n${event.at}`
  return `msg_${createHash('sha256').update(key).digest('base64url').slice(0, 32)}`
}
