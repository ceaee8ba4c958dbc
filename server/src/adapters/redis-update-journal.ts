import { type Cluster, Redis } from 'ioredis'
import type { Logger } from '../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../ports/dependency-outcomes.js'
import type { JournalContents, JournalPosition, UpdateJournal } from '../ports/update-journal.js'
import { openClusterConnection } from './redis-cluster-connection.js'
import { closeConnection } from './redis-pubsub.js'
import { roomKey } from './room-keys.js'

export interface RedisUpdateJournalOptions {
  /** Prepended to every key, so several deployments can share one Redis. */
  keyPrefix?: string
  logger: Logger
  /** Told of connection losses and of the connection being ready again (the core reports appends). */
  outcomes?: DependencyOutcomes
  /** The URL names a Redis Cluster's configuration endpoint (MemoryDB): connect with a cluster client. */
  cluster?: boolean
}

// Each server appends to a stream of its own per room, and names itself in the room's set of
// writers in the same step, so a loading server finds every stream. A stream trimmed empty is
// deleted with its name, atomically: an append racing the trim re-adds both.
const APPEND = `
redis.call('SADD', KEYS[2], ARGV[1])
return redis.call('XADD', KEYS[1], '*', 'u', ARGV[2])`
const TRIM = `
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1])
if redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 0`

type JournalCommands = (Redis | Cluster) & {
  journalAppend(stream: string, writers: string, writer: string, update: Buffer): Promise<string>
  journalTrim(stream: string, writers: string, minId: string, writer: string): Promise<number>
}

/**
 * `UpdateJournal` on Redis Streams, for cluster mode. Keys share the `{room}` hash tag, so a
 * room's keys stay together on a Redis Cluster too (`cluster`: MemoryDB). While Redis is
 * unreachable, ioredis holds appends for a bounded number of reconnection attempts, then fails them
 * (the server then saves a snapshot at once, and acknowledges the updates once it is saved). A
 * cluster client has no such bound: it holds them until a node answers again (until then the
 * updates stay unacknowledged, and the next snapshot saves them).
 */
export class RedisUpdateJournal implements UpdateJournal {
  readonly #redis: JournalCommands
  readonly #prefix: string
  readonly #lossListeners: (() => void)[] = []

  constructor(
    private readonly writer: string,
    redisUrl: string,
    options: RedisUpdateJournalOptions,
  ) {
    this.#prefix = options.keyPrefix ?? 'symphony:'
    const connectionName = `${writer}:journal`
    const redis = options.cluster
      ? openClusterConnection(redisUrl, connectionName)
      : new Redis(redisUrl, { connectionName })
    redis.defineCommand('journalAppend', { numberOfKeys: 2, lua: APPEND })
    redis.defineCommand('journalTrim', { numberOfKeys: 2, lua: TRIM })
    const outcomes = options.outcomes ?? IGNORED_OUTCOMES
    redis.on('error', (error: Error) => {
      outcomes.failed('journal', 'connection', error)
      options.logger.error({ err: error, role: 'journal' }, 'redis connection error')
    })
    redis.on('reconnecting', () =>
      outcomes.failed('journal', 'disconnect', new Error('the journal connection to Redis was lost')),
    )
    let connectedBefore = false
    redis.on('ready', () => {
      outcomes.succeeded('journal')
      // A Redis without persistence restarts empty: what it had confirmed may be gone.
      if (connectedBefore) for (const listener of this.#lossListeners) listener()
      connectedBefore = true
    })
    this.#redis = redis as JournalCommands
  }

  async append(room: string, update: Uint8Array): Promise<JournalPosition> {
    const id = await this.#redis.journalAppend(
      this.#stream(room, this.writer),
      this.#writers(room),
      this.writer,
      Buffer.from(update.buffer, update.byteOffset, update.byteLength),
    )
    return new Map([[this.writer, id]])
  }

  async read(room: string): Promise<JournalContents> {
    const writers = await this.#redis.smembers(this.#writers(room))
    const updates: Uint8Array[] = []
    const position = new Map<string, string>()
    for (const writer of writers) {
      const entries = await this.#redis.xrangeBuffer(this.#stream(room, writer), '-', '+')
      for (const [, fields] of entries) {
        // Copied: ioredis may reuse the reply's buffer.
        const update = fields[1]
        if (update) updates.push(new Uint8Array(update))
      }
      const last = entries.at(-1)
      if (last) position.set(writer, last[0].toString())
    }
    return { updates, position }
  }

  async trim(room: string, position: JournalPosition): Promise<void> {
    await Promise.all(
      [...position].map(([writer, lastId]) =>
        this.#redis.journalTrim(this.#stream(room, writer), this.#writers(room), nextId(lastId), writer),
      ),
    )
  }

  async delete(room: string): Promise<void> {
    const writers = await this.#redis.smembers(this.#writers(room))
    await this.#redis.del(this.#writers(room), ...writers.map((writer) => this.#stream(room, writer)))
  }

  async close(): Promise<void> {
    await closeConnection(this.#redis)
  }

  onPossibleLoss(listener: () => void): void {
    this.#lossListeners.push(listener)
  }

  /** The room key-encoded: `{` `}` in a name would otherwise move the hash tag. */
  #writers(room: string): string {
    return `${this.#prefix}journal:{${roomKey(room)}}`
  }

  #stream(room: string, writer: string): string {
    return `${this.#prefix}journal:{${roomKey(room)}}:${writer}`
  }
}

/** The smallest stream id after `id` (`<ms>-<seq>`): XTRIM MINID keeps ids from there on. */
function nextId(id: string): string {
  const [ms, seq] = id.split('-')
  return `${ms}-${Number(seq) + 1}`
}
