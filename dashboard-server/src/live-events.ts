import { decodeMetadataNotification, METADATA_NOTIFY_CHANNEL } from '@symphony/client/wire'
import type { Response } from 'express'
import pg from 'pg'
import { type Logger, pino } from 'pino'
import type { MetadataQueries } from './queries.js'

/** A comment line this often keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000
const RECONNECT_MS = 1_000

/**
 * Server-Sent Events with live per-room connection counts, driven by Postgres LISTEN/NOTIFY: each
 * batch a sync server writes names the rooms it touched; their counts are read once and pushed
 * to every open stream. No polling. When a server writes its own samples, an `event: samples`
 * names it, so the page re-reads its charts.
 */
export class LiveEvents {
  readonly #streams = new Set<Response>()
  readonly #keepalive: NodeJS.Timeout
  #listener: pg.Client | null = null
  #closed = false

  constructor(
    private readonly databaseUrl: string,
    private readonly queries: MetadataQueries,
    private readonly logger: Logger = pino({ level: 'silent' }),
  ) {
    this.#keepalive = setInterval(() => this.#write(': keepalive\n\n'), KEEPALIVE_MS)
    this.#keepalive.unref()
  }

  /** Starts listening; resolves once LISTEN is in place (retries in the background on failure). */
  async start(): Promise<void> {
    if (this.#closed) return
    // keepAlive: a half-open connection would otherwise leave the feed silently dead.
    const client = new pg.Client({ connectionString: this.databaseUrl, keepAlive: true })
    let failed = false
    const fail = (error: Error) => {
      if (failed) return // 'error' and the rejected query may both report one failure
      failed = true
      this.#reconnect(client, error)
    }
    client.on('notification', (message) => void this.#onNotification(message.payload))
    client.on('error', fail)
    try {
      await client.connect()
      await client.query(`LISTEN ${METADATA_NOTIFY_CHANNEL}`)
      if (this.#closed) {
        await client.end()
        return
      }
      this.#listener = client
    } catch (error) {
      fail(error as Error)
    }
  }

  /** Adds an HTTP response as an event stream until the client goes away. */
  subscribe(response: Response): void {
    response.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    })
    response.write(': connected\n\n')
    this.#streams.add(response)
    response.on('close', () => this.#streams.delete(response))
  }

  /** Open event streams now. */
  get clientCount(): number {
    return this.#streams.size
  }

  async close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#keepalive)
    for (const stream of this.#streams) stream.end()
    await this.#listener?.end().catch(() => {})
  }

  async #onNotification(payload: string | undefined): Promise<void> {
    if (this.#streams.size === 0) return
    const message = decodeMetadataNotification(payload)
    if (!message) return // not ours
    const { rooms } = message
    if (message.samples)
      this.#write(`event: samples\ndata: ${JSON.stringify({ server: message.server })}\n\n`)
    if (rooms?.length === 0) return
    try {
      // `null` means "too many rooms to name": the busiest are sent instead.
      const counts = await this.queries.connectionCounts(rooms)
      if (counts.length > 0) this.#write(`event: rooms\ndata: ${JSON.stringify(counts)}\n\n`)
    } catch (error) {
      this.logger.warn({ err: error }, 'live events: could not read connection counts')
    }
  }

  #write(chunk: string): void {
    for (const stream of this.#streams) stream.write(chunk)
  }

  #reconnect(client: pg.Client, error: Error): void {
    if (this.#listener === client) this.#listener = null
    void client.end().catch(() => {})
    if (this.#closed) return
    this.logger.warn(
      { err: error, retryInMs: RECONNECT_MS },
      'live events: database connection lost; listening again',
    )
    setTimeout(() => void this.start(), RECONNECT_MS).unref()
  }
}
