import type { Pool } from 'pg'
import type { Logger } from '../../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../../ports/dependency-outcomes.js'
import type {
  MetadataEvent,
  MetadataSink,
  MetadataSinkStats,
  ServerSample,
} from '../../ports/metadata-sink.js'
import type { RoomCatalog } from '../../ports/room-catalog.js'
import { migrate } from './migrations.js'
import { PgRoomCatalog } from './pg-room-catalog.js'
import { type PruneResult, pruneMetadata } from './retention.js'
import { insertServerSamples, SampleDeltas, type ServerSampleRow } from './server-samples.js'
import { HEARTBEAT_SQL, type TimedEvent, writeBatch } from './write-batch.js'

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
  /** Reads the server's load and running totals, for `server_samples`; none: no server samples. */
  sample?: () => Promise<ServerSample>
  /** How often a server sample is taken (written with the next flush). 0 or unset: never. */
  metadataSampleIntervalMs?: number
  /** Samples and closed sessions older than this are deleted (see retention.ts). Unset: kept. */
  retentionMs?: number
  /** How often retention runs. Default an hour; the first run comes a minute or two after start. */
  pruneIntervalMs?: number
  /** The clock samples and retention runs follow (tests drive it). Default `Date.now`. */
  now?: () => number
}

/** Server samples held while the database is away (an hour at the default interval). */
const MAX_QUEUED_SAMPLES = 360

/**
 * Metadata in Postgres (`pg`), written off the hot path: `record` only appends to a bounded
 * queue; a timer writes the queue in one transaction about every second and NOTIFYs the
 * dashboard. A slow or unreachable database only grows the queue (then drops, counted and
 * logged); sync never waits for it. Migrations and the server's row are written on first
 * contact, retried until the database answers.
 */
export class PgMetadataSink implements MetadataSink {
  /** Reads the rooms on this sink's connection, once the schema is migrated. */
  readonly catalog: RoomCatalog = new PgRoomCatalog(() => this.#database())
  readonly #queue: TimedEvent[] = []
  readonly #maxQueued: number
  readonly #timer: NodeJS.Timeout
  readonly #startedAt = new Date()
  #dropped = 0
  #droppedSinceLog = 0
  #connection: Promise<{ pool: Pool; close(): Promise<void> }> | null = null
  #registered = false
  /** The registration under way, so a read and a write never register (and close sessions) twice. */
  #registering: Promise<void> | null = null
  #flushing: Promise<void> = Promise.resolve()
  #writing = false
  #closed = false
  readonly #outcomes: DependencyOutcomes
  readonly #samples: ServerSampleRow[] = []
  readonly #deltas = new SampleDeltas()
  #lastSampleAt: number | null = null
  readonly #now: () => number
  #nextPruneAt: number
  #pruning: Promise<unknown> = Promise.resolve()

  constructor(private readonly options: PgMetadataSinkOptions) {
    this.#outcomes = options.outcomes ?? IGNORED_OUTCOMES
    this.#maxQueued = options.maxQueued ?? 10_000
    this.#now = options.now ?? Date.now
    this.#nextPruneAt = this.#now() + 60_000 + Math.random() * 60_000
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
    await this.#pruning
    await this.flush()
    if (this.#queue.length > 0) {
      this.options.logger.warn({ events: this.#queue.length }, 'metadata not written at shutdown')
    }
    const connection = await this.#connection?.catch(() => null)
    await connection?.close()
  }

  /**
   * Deletes server samples, room samples and closed sessions older than the retention period
   * before `now`, and servers gone for that long (see retention.ts). Runs by itself every
   * `pruneIntervalMs`; null when no retention is set or another server is pruning right now.
   */
  prune(now = new Date(this.#now())): Promise<PruneResult | null> {
    const { retentionMs } = this.options
    if (!retentionMs) return Promise.resolve(null)
    const run = this.#pruning.then(async () => {
      const { pool } = await this.#connect()
      await this.#register(pool)
      return pruneMetadata(pool, {
        before: new Date(now.getTime() - retentionMs),
        stop: () => this.#closed,
      })
    })
    this.#pruning = run.catch(() => {})
    return run
  }

  async #writeQueued(): Promise<void> {
    this.#logDrops()
    await this.#takeSample()
    this.#pruneWhenDue()
    if (this.#queue.length === 0 && this.#samples.length === 0 && this.#registered) {
      // Nothing happened: still say this server is alive, at most every flush.
      return this.#heartbeat()
    }
    const batch = this.#queue.splice(0, this.#queue.length)
    const samples = this.#samples.splice(0, this.#samples.length)
    try {
      const { pool } = await this.#connect()
      await this.#register(pool)
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        if (batch.length > 0 || samples.length === 0) await writeBatch(client, this.options.serverId, batch)
        else await client.query(HEARTBEAT_SQL, [this.options.serverId])
        await insertServerSamples(client, this.options.serverId, samples)
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
      // Samples go back too; past their bound the oldest go (the newest matter most).
      this.#samples.unshift(...samples)
      this.#keepNewestSamples()
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
      await pool.query(HEARTBEAT_SQL, [this.options.serverId])
      this.#outcomes.succeeded('metadata')
    } catch (error) {
      this.#outcomes.failed('metadata', 'heartbeat', error)
      this.options.logger.debug({ err: error }, 'metadata heartbeat failed')
    }
  }

  /** Reads the server's totals when a sample is due; the first reading is the baseline. */
  async #takeSample(): Promise<void> {
    const { sample, metadataSampleIntervalMs } = this.options
    if (!sample || !metadataSampleIntervalMs || this.#closed) return
    const now = this.#now()
    if (this.#lastSampleAt !== null && now - this.#lastSampleAt < metadataSampleIntervalMs) return
    this.#lastSampleAt = now
    try {
      const row = this.#deltas.next(await sample(), new Date(now))
      if (row) this.#samples.push(row)
      this.#keepNewestSamples()
    } catch (error) {
      this.options.logger.debug({ err: error }, 'server sample failed')
    }
  }

  /** Drops the oldest samples past the bound: while the database is away, the newest matter most. */
  #keepNewestSamples(): void {
    this.#samples.splice(0, Math.max(0, this.#samples.length - MAX_QUEUED_SAMPLES))
  }

  /** Starts a retention run in the background when one is due (never waited on by a flush). */
  #pruneWhenDue(): void {
    if (!this.options.retentionMs || !this.#registered || this.#now() < this.#nextPruneAt) return
    this.#nextPruneAt = this.#now() + (this.options.pruneIntervalMs ?? 3_600_000)
    this.prune().then(
      (result) => {
        if (result && Object.values(result).some((n) => n > 0)) {
          this.options.logger.info({ deleted: result }, 'old metadata pruned')
        }
      },
      (error: unknown) => this.options.logger.warn({ err: error }, 'metadata retention failed; will retry'),
    )
  }

  #connect(): Promise<{ pool: Pool; close(): Promise<void> }> {
    this.#connection ??= this.options.connect().catch((error: unknown) => {
      this.#connection = null // try again at the next flush
      throw error
    })
    return this.#connection
  }

  /** The pool, connected and migrated. */
  async #database(): Promise<Pool> {
    const { pool } = await this.#connect()
    await this.#register(pool)
    return pool
  }

  /** Migrates and (re)announces this server, closing what a previous run with its id left open. */
  #register(pool: Pool): Promise<void> {
    if (this.#registered) return Promise.resolve()
    this.#registering ??= this.#announce(pool).finally(() => {
      this.#registering = null
    })
    return this.#registering
  }

  async #announce(pool: Pool): Promise<void> {
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
