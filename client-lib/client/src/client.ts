import { hasIndexedDb } from './offline-store.js'
import { type ReconnectOptions, ReconnectSchedule } from './reconnect-schedule.js'
import { Room } from './room.js'
import type { TokenSource } from './room-connection.js'
import { DEFAULT_MAX_PRESENCE_BYTES } from './wire/presence-limits.js'
import { isValidRoomName, ROOM_NAME_RULE, roomPath } from './wire/room-name.js'

/**
 * Options of `createClient`.
 *
 * @example
 * const options: ClientOptions = { url: 'wss://sync.example.com', getToken: () => api.syncToken() }
 */
export interface ClientOptions {
  /** The sync server, e.g. `wss://sync.example.com` (http(s) URLs are accepted too). */
  url: string
  /** A fixed JWT. Use `getToken` instead when tokens expire. */
  token?: string
  /** Returns a fresh JWT; called before every connection attempt, reconnects included. */
  getToken?: () => string | Promise<string>
  /**
   * Keep each room in IndexedDB so edits survive reloads and sync when the network returns.
   * Default: true where IndexedDB exists (browsers), false elsewhere (Node).
   */
  offline?: boolean
  /** Backoff between connection attempts. */
  reconnect?: ReconnectOptions
  /** An attempt not open after this many milliseconds (getToken included) is retried. Default 15 000. */
  connectTimeoutMs?: number
  /**
   * Share edits and presence with other tabs of this browser over a BroadcastChannel, even while
   * offline. Default: true in browsers, false elsewhere (in Node every client would see every other).
   */
  crossTab?: boolean
  /** A WebSocket implementation, for runtimes without a global one (Node 20: the `ws` package). */
  WebSocket?: typeof WebSocket
  /**
   * The server's `MAX_PRESENCE_BYTES` (default 16 384, the server's default). A presence state
   * bigger than this is not shared (the server would close the connection for it): the room
   * reports `PRESENCE_TOO_BIG` and keeps the previous state.
   */
  maxPresenceBytes?: number
}

/**
 * The entry point: one per server, usually one per page.
 *
 * @example
 * const client = createClient({ url: 'wss://sync.example.com', getToken: fetchMyToken })
 * const room = client.enter('board-1')
 */
export function createClient(options: ClientOptions): SymphonyClient {
  return new SymphonyClient(options)
}

/**
 * Holds the rooms a page is in. Made by `createClient`.
 *
 * @example
 * const client: SymphonyClient = createClient({ url: 'wss://sync.example.com' })
 */
export class SymphonyClient {
  readonly #rooms = new Map<string, Room<object>>()
  readonly #serverUrl: string
  readonly #tokens: TokenSource

  constructor(private readonly options: ClientOptions) {
    this.#serverUrl = toWebSocketUrl(options.url)
    this.#tokens = tokenSource(options)
    // The runtime's WebSocket and IndexedDB are looked at when a room is entered, not here: a
    // client may be made during server rendering, where neither exists.
    new ReconnectSchedule(options.reconnect) // validates the delays now rather than at the first failure
    if (options.connectTimeoutMs !== undefined && !(options.connectTimeoutMs > 0)) {
      throw new RangeError('connectTimeoutMs must be a positive number of milliseconds')
    }
    const { maxPresenceBytes } = options
    if (maxPresenceBytes !== undefined && !(Number.isSafeInteger(maxPresenceBytes) && maxPresenceBytes > 0)) {
      throw new RangeError('maxPresenceBytes must be a positive whole number of bytes')
    }
  }

  /**
   * Joins `roomId` (1–128 Unicode characters without control characters) and starts syncing.
   * Entering a room the client is already in returns the same `Room`. Throws if the runtime lacks
   * WebSocket (pass `WebSocket`) or, with `offline: true`, IndexedDB.
   *
   * @example
   * const room = client.enter<{ name: string }>('board-1')
   * room.presence.set({ name: 'Ada' })
   */
  enter<P extends object = Record<string, unknown>>(roomId: string): Room<P> {
    if (!isValidRoomName(roomId)) {
      throw new TypeError(`invalid room name ${JSON.stringify(roomId)}: ${ROOM_NAME_RULE}`)
    }
    const existing = this.#rooms.get(roomId)
    if (existing) return existing as Room<P>
    const offline = this.options.offline ?? hasIndexedDb()
    if (offline && !hasIndexedDb()) {
      throw new TypeError('offline: true needs IndexedDB, which this runtime lacks; pass offline: false')
    }
    if (!this.options.WebSocket && typeof WebSocket === 'undefined') {
      throw new TypeError('this runtime has no WebSocket; pass one as the WebSocket option (e.g. from "ws")')
    }
    const room = new Room<P>({
      id: roomId,
      serverUrl: this.#serverUrl,
      tokens: this.#tokens,
      schedule: new ReconnectSchedule(this.options.reconnect),
      WebSocket: this.options.WebSocket ?? WebSocket,
      fetch: (...args) => fetch(...args),
      connectTimeoutMs: this.options.connectTimeoutMs ?? 15_000,
      crossTab: this.options.crossTab ?? typeof window !== 'undefined',
      offlineStoreName: offline ? offlineStoreName(this.#serverUrl, roomId) : null,
      maxPresenceBytes: this.options.maxPresenceBytes ?? DEFAULT_MAX_PRESENCE_BYTES,
    })
    this.#rooms.set(roomId, room as Room<object>)
    return room
  }

  /**
   * Leaves `roomId`: peers see this user go, the connection closes, the local copy stays in
   * IndexedDB for next time.
   *
   * @example
   * await client.leave('board-1')
   */
  async leave(roomId: string): Promise<void> {
    const room = this.#rooms.get(roomId)
    if (!room) return
    this.#rooms.delete(roomId)
    await room.close()
  }

  /**
   * Leaves every room.
   *
   * @example
   * window.addEventListener('pagehide', () => client.destroy())
   */
  async destroy(): Promise<void> {
    await Promise.all([...this.#rooms.keys()].map((roomId) => this.leave(roomId)))
  }
}

function toWebSocketUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError(`url ${JSON.stringify(url)} is not a URL; expected e.g. wss://sync.example.com`)
  }
  if (!/^(wss?|https?):$/.test(parsed.protocol)) {
    throw new TypeError(`url must be ws://, wss://, http:// or https://, not ${parsed.protocol}`)
  }
  parsed.protocol = parsed.protocol.replace('http', 'ws')
  parsed.search = ''
  parsed.hash = ''
  return parsed.toString().replace(/\/+$/, '')
}

/**
 * The IndexedDB database of a room. Names with `/` or `%` are encoded, so the last `/` always
 * separates server and room; other names keep the form earlier versions used, and their data.
 */
function offlineStoreName(serverUrl: string, roomId: string): string {
  const room = /[/%]/.test(roomId) ? roomPath(roomId) : roomId
  return `symphony:${serverUrl}/${room}`
}

function tokenSource({ token, getToken }: ClientOptions): TokenSource {
  if (token !== undefined && getToken) throw new TypeError('pass token or getToken, not both')
  if (!getToken) return async () => token ?? null
  return async () => {
    const fresh = await getToken()
    if (typeof fresh !== 'string' || fresh === '') throw new Error('getToken returned no token')
    return fresh
  }
}
