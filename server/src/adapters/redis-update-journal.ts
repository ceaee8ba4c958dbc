import { flushAtTurnEnd } from '../cork-until-turn-ends.js'
import { within } from '../deadline.js'
import type { Logger } from '../logger.js'
import { type DependencyOutcomes, IGNORED_OUTCOMES } from '../ports/dependency-outcomes.js'
import type { JournalContents, JournalPosition, UpdateJournal } from '../ports/update-journal.js'
import { chunks, MAX_ITEMS_PER_COMMAND } from './command-batches.js'
import { staleEpoch } from './epoch-fences.js'
import { DEFAULT_REDIS_LINK, type RedisConnection, type RedisLinkSettings } from './redis-connection.js'
import { RedisLink } from './redis-link.js'
import { roomKey } from './room-keys.js'

export interface RedisUpdateJournalOptions {
  /** Prepended to every key, so several deployments can share one Redis. */
  keyPrefix?: string
  logger: Logger
  /** Told of connection losses and missed heartbeats, and of proofs (the core reports appends). */
  outcomes?: DependencyOutcomes
  /** The URL names a Redis Cluster's configuration endpoint (MemoryDB): connect with a cluster client. */
  cluster?: boolean
  /** Deadlines, keepalive and heartbeat of the connection; each defaults to `DEFAULT_REDIS_LINK`. */
  link?: Partial<RedisLinkSettings>
}

// A room's owner appends to the room's stream, and names it in the room's set of streams in the
// same step, so a loading server finds every stream (an earlier version wrote one per server:
// those are read and trimmed as well). A stream trimmed empty is deleted with its name,
// atomically: an append racing the trim re-adds both.
// Each room has a fence: the last owner's epoch. A write carrying an epoch refuses (as
// 'stale <fenced epoch>') when a later one fenced the room, else renews the fence at its own.
// A turn's appends in one command: KEYS holds stream, streams, fence, stream, … and ARGV the
// stream's name, the fence's lifetime, then each update and its epoch ('' for none), in the order
// they were recorded. Returns each entry's id or refusal.
const FENCE_CHECK = `
local function fenced(key, epoch, lifetime)
  if epoch == '' then return nil end
  local at = tonumber(redis.call('GET', key) or '0')
  if at > tonumber(epoch) then return 'stale ' .. at end
  redis.call('SET', key, epoch, 'PX', lifetime)
  return nil
end`
const APPEND = `${FENCE_CHECK}
local ids = {}
for i = 1, #KEYS / 3 do
  local refused = fenced(KEYS[3 * i], ARGV[2 * i + 2], ARGV[2])
  if refused then
    ids[i] = refused
  else
    redis.call('SADD', KEYS[3 * i - 1], ARGV[1])
    ids[i] = redis.call('XADD', KEYS[3 * i - 2], '*', 'u', ARGV[2 * i + 1])
  end
end
return ids`
// KEYS: stream, streams, fence; ARGV: the first id kept, the stream's name, epoch, the fence's lifetime.
const TRIM = `${FENCE_CHECK}
local refused = fenced(KEYS[3], ARGV[3], ARGV[4])
if refused then return refused end
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1])
if redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 'ok'`
// KEYS: fence, then the keys to delete; ARGV: epoch, the fence's lifetime.
const DELETE = `${FENCE_CHECK}
local refused = fenced(KEYS[1], ARGV[1], ARGV[2])
if refused then return refused end
if #KEYS > 1 then redis.call('DEL', unpack(KEYS, 2)) end
return 'ok'`
// KEYS: fence; ARGV: epoch, the fence's lifetime.
const FENCE = `${FENCE_CHECK}
return fenced(KEYS[1], ARGV[1], ARGV[2]) or 'ok'`

/**
 * How long a room's fence outlives its owner's last write: an owner stalled (or cut off) longer
 * than this could write again unfenced. A week, so a year of rooms leaves no keys behind.
 */
const FENCE_LIFETIME_MS = 7 * 24 * 3600 * 1000

/** The name of a room's one stream, in its set of streams. */
const ROOM_STREAM = 'owner'

type JournalCommands = RedisConnection & {
  journalAppend(...keysThenArguments: (string | Buffer | number)[]): Promise<string[]>
  journalTrim(...keysThenArguments: (string | number)[]): Promise<string>
  journalDelete(...keysThenArguments: (string | number)[]): Promise<string>
  journalFence(fence: string, epoch: string, lifetimeMs: number): Promise<string>
}

interface PendingAppend {
  room: string
  update: Uint8Array
  epoch: number | undefined
  resolve(position: JournalPosition): void
  reject(error: unknown): void
}

/**
 * `UpdateJournal` on Redis Streams, for cluster mode. Keys share the `{room}` hash tag, so a
 * room's keys stay together on a Redis Cluster too (`cluster`: MemoryDB). A command unanswered
 * within the link's command timeout fails (an append too: the server then saves a snapshot at
 * once, and acknowledges the updates once it is saved). A PING heartbeat proves the connection;
 * a missed one replaces it, which also fails what a cluster client holds while no node answers.
 */
export class RedisUpdateJournal implements UpdateJournal {
  readonly #link: RedisLink<RedisConnection>
  /**
   * Each call's own deadline too: a Redis Cluster client (MemoryDB) applies no command timeout to
   * what waits in its offline queue, so a room's load or deletion could wait forever.
   */
  readonly #commandTimeoutMs: number
  readonly #prefix: string
  readonly #lossListeners: (() => void)[] = []
  readonly #cluster: boolean
  /** This turn's appends, sent together once it ends. */
  #pending: PendingAppend[] = []

  /** `server`: names the connection in Redis (`CLIENT LIST`). */
  constructor(server: string, redisUrl: string, options: RedisUpdateJournalOptions) {
    this.#prefix = options.keyPrefix ?? 'symphony:'
    const settings = { ...DEFAULT_REDIS_LINK, ...options.link }
    this.#commandTimeoutMs = settings.commandTimeoutMs
    this.#cluster = options.cluster ?? false
    let connectedBefore = false
    this.#link = new RedisLink<RedisConnection>({
      url: redisUrl,
      role: 'journal',
      name: `${server}:journal`,
      settings,
      cluster: options.cluster,
      outcomes: options.outcomes ?? IGNORED_OUTCOMES,
      logger: options.logger,
      prove: async (redis) => {
        await redis.ping()
      },
      setup: (redis) => {
        redis.defineCommand('journalAppend', { lua: APPEND }) // the key count comes first
        redis.defineCommand('journalTrim', { numberOfKeys: 3, lua: TRIM })
        redis.defineCommand('journalDelete', { lua: DELETE }) // the key count comes first
        redis.defineCommand('journalFence', { numberOfKeys: 1, lua: FENCE })
      },
      onReady: () => {
        if (connectedBefore) {
          // A Redis without persistence restarts empty: what it had confirmed may be gone. (So may
          // what a connection replaced after a missed heartbeat had confirmed: it is the same Redis.)
          for (const listener of this.#lossListeners) listener()
        }
        connectedBefore = true
      },
    })
  }

  /** The connection now (a missed heartbeat replaces it). */
  get #redis(): JournalCommands {
    return this.#link.connection as JournalCommands
  }

  append(room: string, update: Uint8Array, epoch?: number): Promise<JournalPosition> {
    // Appends wait for the end of the turn and go out together (`#flush`): one command per turn
    // instead of one per update, still ahead of anything the turn sends its clients.
    if (this.#pending.length === 0) flushAtTurnEnd(this.#flush)
    return new Promise((resolve, reject) => this.#pending.push({ room, update, epoch, resolve, reject }))
  }

  fence(room: string, epoch: number): Promise<void> {
    const fencing = this.#redis.journalFence(this.#fence(room), String(epoch), FENCE_LIFETIME_MS)
    return this.#within(fencing.then(refusedIfStale(room, epoch)), 'a journal fence')
  }

  read(room: string): Promise<JournalContents> {
    return this.#within(this.#read(room), 'a journal read')
  }

  trim(room: string, position: JournalPosition, epoch?: number): Promise<void> {
    return this.#within(this.#trim(room, position, epoch), 'a journal trim')
  }

  delete(room: string, epoch?: number): Promise<void> {
    return this.#within(this.#delete(room, epoch), 'a journal deletion')
  }

  #within<T>(operation: Promise<T>, what: string): Promise<T> {
    return within(operation, 2 * this.#commandTimeoutMs, what)
  }

  readonly #flush = (): void => {
    const batch = this.#pending
    if (batch.length === 0) return
    this.#pending = []
    // A Redis Cluster (MemoryDB) runs a command on one slot: there, a command per room.
    const groups = (this.#cluster ? byRoom(batch) : [batch]).flatMap((group) =>
      chunks(group, MAX_ITEMS_PER_COMMAND),
    )
    for (const group of groups) {
      this.#within(this.#appendAll(group), 'a journal append').then(
        (ids) => {
          group.forEach((append, i) => {
            const id = ids[i] as string
            const stale = staleAt(id)
            if (stale === null) append.resolve(new Map([[ROOM_STREAM, id]]))
            else append.reject(staleEpoch(append.room, append.epoch ?? 0, stale))
          })
        },
        (error: unknown) => {
          for (const append of group) append.reject(error)
        },
      )
    }
  }

  async #appendAll(appends: PendingAppend[]): Promise<string[]> {
    const keys = appends.flatMap(({ room }) => [
      this.#stream(room, ROOM_STREAM),
      this.#streams(room),
      this.#fence(room),
    ])
    const updates = appends.flatMap(({ update, epoch }) => [
      Buffer.from(update.buffer, update.byteOffset, update.byteLength),
      epoch === undefined ? '' : String(epoch),
    ])
    const ids = await this.#redis.journalAppend(
      keys.length,
      ...keys,
      ROOM_STREAM,
      FENCE_LIFETIME_MS,
      ...updates,
    )
    if (ids.length !== appends.length)
      throw new Error(`the journal confirmed ${ids.length} of ${appends.length} appends`)
    return ids
  }

  async #read(room: string): Promise<JournalContents> {
    const streams = await this.#redis.smembers(this.#streams(room))
    const updates: Uint8Array[] = []
    const position = new Map<string, string>()
    for (const stream of streams) {
      const entries = await this.#redis.xrangeBuffer(this.#stream(room, stream), '-', '+')
      for (const [, fields] of entries) {
        // Copied: ioredis may reuse the reply's buffer.
        const update = fields[1]
        if (update) updates.push(new Uint8Array(update))
      }
      const last = entries.at(-1)
      if (last) position.set(stream, last[0].toString())
    }
    return { updates, position }
  }

  async #trim(room: string, position: JournalPosition, epoch: number | undefined): Promise<void> {
    const fence = epoch === undefined ? '' : String(epoch)
    const refused = refusedIfStale(room, epoch ?? 0)
    await Promise.all(
      [...position].map(([stream, lastId]) =>
        this.#redis
          .journalTrim(
            this.#stream(room, stream),
            this.#streams(room),
            this.#fence(room),
            nextId(lastId),
            stream,
            fence,
            FENCE_LIFETIME_MS,
          )
          .then(refused),
      ),
    )
  }

  async #delete(room: string, epoch: number | undefined): Promise<void> {
    const streams = await this.#redis.smembers(this.#streams(room))
    const keys = [
      this.#fence(room),
      this.#streams(room),
      ...streams.map((stream) => this.#stream(room, stream)),
    ]
    const answer = await this.#redis.journalDelete(
      keys.length,
      ...keys,
      epoch === undefined ? '' : String(epoch),
      FENCE_LIFETIME_MS,
    )
    refusedIfStale(room, epoch ?? 0)(answer)
  }

  async close(): Promise<void> {
    this.#flush() // this turn's appends go out ahead of QUIT, which waits for them
    await this.#link.close()
  }

  onPossibleLoss(listener: () => void): void {
    this.#lossListeners.push(listener)
  }

  /** The set of the room's streams; the room key-encoded: `{` `}` in a name would otherwise move the hash tag. */
  #streams(room: string): string {
    return `${this.#prefix}journal:{${roomKey(room)}}`
  }

  /** The room's fence: the epoch of its last owner's write. */
  #fence(room: string): string {
    return `${this.#prefix}journal-fence:{${roomKey(room)}}`
  }

  #stream(room: string, stream: string): string {
    return `${this.#prefix}journal:{${roomKey(room)}}:${stream}`
  }
}

function byRoom(appends: PendingAppend[]): PendingAppend[][] {
  const groups = new Map<string, PendingAppend[]>()
  for (const append of appends) {
    const group = groups.get(append.room)
    if (group) group.push(append)
    else groups.set(append.room, [append])
  }
  return [...groups.values()]
}

/** The later epoch a script's answer names ('stale <epoch>'), or null for any other answer. */
function staleAt(answer: string): number | null {
  return answer.startsWith('stale ') ? Number(answer.slice(6)) : null
}

/** Throws the refusal a script answered for a write at `epoch`. */
function refusedIfStale(room: string, epoch: number): (answer: string) => void {
  return (answer) => {
    const stale = staleAt(answer)
    if (stale !== null) throw staleEpoch(room, epoch, stale)
  }
}

/** The smallest stream id after `id` (`<ms>-<seq>`): XTRIM MINID keeps ids from there on. */
function nextId(id: string): string {
  const [ms, seq] = id.split('-')
  return `${ms}-${Number(seq) + 1}`
}
