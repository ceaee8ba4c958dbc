import type { Pool } from 'pg'
import type { Logger } from '../../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../../ports/dependency-outcomes.js'
import type { MetadataEvent, MetadataSink, MetadataSinkStats } from '../../ports/metadata-sink.js'
import { migrate } from './migrations.js'
import { type TimedEvent, writeBatch } from './write-batch.js'

export interface PgMetadataSinkOptions {
  serverId: string
  /** How operators reach this server (its internal address, or host:port). */
  address: string
  /** Opens the pool; for the embedded database this first starts PGlite. Called once. */
  connect: () => Promise<{ pool: Pool; close(): Promise<void> }>
  logger: Logger
  /** Told of each write and heartbeat: whether the database answered. */
  outcomes?: DependencyOutcomes
  /** How often queued events are written. Default 1 000 ms. */
  flushIntervalMs?: number
  /** Events held while the database is slow or away; past this, new events are dropped. */
  maxQueued?: number
}

/**
 * Metadata in Postgres (`pg`), written off the hot path: `record` only appends to a bounded
 * queue; a timer writes the queue in one transaction about every second and NOTIFYs the
 * dashboard. A slow or unreachable database only grows the queue (then drops, counted and
 * logged); sync never waits for it. Migrations and the server's row are written on first
 * contact, retried until the database answers.
 */
export class PgMetadataSink implements MetadataSink {
  readonly #queue: TimedEvent[] = []
  readonly #maxQueued: number
  readonly #timer: NodeJS.Timeout
  readonly #startedAt = new Date()
  #dropped = 0
  #droppedSinceLog = 0
  #connection: Promise<{ pool: Pool; close(): Promise<void> }> | null = null
  #registered = false
  #flushing: Promise<void> = Promise.resolve()
  #writing = false
  #closed = false
  readonly #outcomes: DependencyOutcomes

  constructor(private readonly options: PgMetadataSinkOptions) {
    this.#outcomes = options.outcomes ?? IGNORED_OUTCOMES
    this.#maxQueued = options.maxQueued ?? 10_000
    // A tick while a write is still running is skipped, so a slow database never stacks writes up.
    this.#timer = setInterval(() => {
      if (!this.#writing) void this.flush()
    }, options.flushIntervalMs ?? 1_000)
    this.#timer.unref()
  }

  record(event: MetadataEvent): void {
    if (this.#queue.length >= this.#maxQueued) {
      this.#dropped++
      this.#droppedSinceLog++
      return
    }
    this.#queue.push({ event, at: new Date() })
  }

  stats(): MetadataSinkStats {
    return { queued: this.#queue.length, dropped: this.#dropped }
  }

  /** Writes what is queued now; one write at a time. Never rejects. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      this.#writing = true
      try {
        await this.#writeQueued()
      } finally {
        this.#writing = false
      }
    })
    return this.#flushing
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearInterval(this.#timer)
    await this.flush()
    if (this.#queue.length > 0) {
      this.options.logger.warn({ events: this.#queue.length }, 'metadata not written at shutdown')
    }
    const connection = await this.#connection?.catch(() => null)
    await connection?.close()
  }

  async #writeQueued(): Promise<void> {
    this.#logDrops()
    if (this.#queue.length === 0 && this.#registered) {
      // Nothing happened: still say this server is alive, at most every flush.
      return this.#heartbeat()
    }
    const batch = this.#queue.splice(0, this.#queue.length)
    try {
      const { pool } = await this.#connect()
      await this.#register(pool)
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await writeBatch(client, this.options.serverId, batch)
        await client.query('COMMIT')
        client.release()
        this.#outcomes.succeeded('metadata')
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        // Passing the error discards the connection rather than pooling one in an unknown state.
        client.release(error as Error)
        throw error
      }
    } catch (error) {
      // Put the batch back in front of what arrived meanwhile, within the bound (oldest kept).
      const room = Math.max(0, this.#maxQueued - this.#queue.length)
      const kept = batch.slice(0, room)
      this.#dropped += batch.length - kept.length
      this.#droppedSinceLog += batch.length - kept.length
      this.#queue.unshift(...kept)
      this.#outcomes.failed('metadata', 'write', error)
      this.options.logger.warn(
        { err: error, queued: this.#queue.length },
        'metadata write failed; will retry',
      )
    }
  }

  async #heartbeat(): Promise<void> {
    try {
      const { pool } = await this.#connect()
      await pool.query('UPDATE servers SET last_heartbeat_at = now() WHERE id = $1', [this.options.serverId])
      this.#outcomes.succeeded('metadata')
    } catch (error) {
      this.#outcomes.failed('metadata', 'heartbeat', error)
      this.options.logger.debug({ err: error }, 'metadata heartbeat failed')
    }
  }

  #connect(): Promise<{ pool: Pool; close(): Promise<void> }> {
    this.#connection ??= this.options.connect().catch((error: unknown) => {
      this.#connection = null // try again at the next flush
      throw error
    })
    return this.#connection
  }

  /** Migrates and (re)announces this server, closing what a previous run with its id left open. */
  async #register(pool: Pool): Promise<void> {
    if (this.#registered) return
    const applied = await migrate(pool)
    if (applied.length > 0) this.options.logger.info({ versions: applied }, 'metadata schema migrated')
    const { serverId, address } = this.options
    await pool.query(
      `INSERT INTO servers (id, address, started_at, last_heartbeat_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (id) DO UPDATE SET address = $2, started_at = $3, last_heartbeat_at = now()`,
      [serverId, address, this.#startedAt],
    )
    await pool.query(
      'UPDATE connection_sessions SET closed_at = now() WHERE server_id = $1 AND closed_at IS NULL',
      [serverId],
    )
    await pool.query('DELETE FROM room_holders WHERE server_id = $1', [serverId])
    this.#registered = true
  }

  #logDrops(): void {
    if (this.#droppedSinceLog === 0) return
    this.options.logger.warn(
      { dropped: this.#droppedSinceLog, total: this.#dropped, maxQueued: this.#maxQueued },
      'metadata queue full: events dropped',
    )
    this.#droppedSinceLog = 0
  }
}
