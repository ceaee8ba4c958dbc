import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { readAuthMessage } from 'y-protocols/auth'
import type { Awareness } from 'y-protocols/awareness'
import { messageAuth, WebsocketProvider } from 'y-websocket'
import type * as Y from 'yjs'
import { checkAccess } from './access-check.js'
import { AppRequests } from './app-requests.js'
import { isAuthDenied, SymphonyClientError } from './errors.js'
import { sendOwnPresenceOnly } from './own-presence.js'
import type { ReconnectSchedule } from './reconnect-schedule.js'
import { UnsyncedChanges } from './unsynced-changes.js'
import { CloseCode, closeCodeName, shouldBackOff, shouldReconnect } from './wire/close-codes.js'
import { decodeEventSender, type EventSender } from './wire/event-sender.js'
import {
  BROADCAST_PARAM,
  INCARNATION_PARAM,
  MESSAGE_BROADCAST,
  MESSAGE_INCARNATION,
  SYNC_STATUS_PARAM,
} from './wire/message-types.js'
import { roomPath } from './wire/room-name.js'
import { offeredProtocols } from './wire/token-protocol.js'

/**
 * Where a room stands with the server: `'connecting'` (also before the first attempt),
 * `'connected'` (open, catching up), `'synced'`, `'offline'` (waiting to retry, or the browser
 * is offline) or `'failed'` (connecting stopped for good after an error, `room.error`, until
 * `room.reconnect()`).
 *
 * @example
 * room.on('status', (status: RoomStatus) => badge.classList.toggle('live', status === 'synced'))
 */
export type RoomStatus = 'connecting' | 'connected' | 'synced' | 'offline' | 'failed'

/** Returns the token for the next connection attempt, or null to connect without one. */
export type TokenSource = () => Promise<string | null>

/** How every room of one client connects; `createClient` builds it once from its options. */
export interface ConnectionSettings {
  serverUrl: string
  tokens: TokenSource
  schedule: ReconnectSchedule
  WebSocket: typeof WebSocket
  fetch: typeof fetch
  crossTab: boolean
  /** An attempt still not open after this long (token included) is abandoned and retried. */
  connectTimeoutMs: number
}

export interface RoomConnectionOptions extends ConnectionSettings {
  room: string
  doc: Y.Doc
  awareness: Awareness
  onStatus(status: RoomStatus): void
  onError(error: SymphonyClientError, final: boolean): void
  /** Local edits began or ceased to wait for the server's acknowledgement. */
  onUnsynced(unsynced: boolean): void
  /** Another client broadcast an event; `from` as its server stamped it (null: a server too old to). */
  onEvent(data: unknown, from: EventSender | null): void
  /** The incarnation the document belongs to (null: it never synced); sent with every attempt. */
  incarnation(): number | null
  /** The server named the room's incarnation: the document belongs to it from now on. */
  onIncarnation(incarnation: number): void
}

/**
 * Keeps one room connected. y-websocket's provider speaks the protocol; this class owns when to
 * connect: a fresh token before every attempt, full-jitter backoff between attempts, no attempts
 * while the browser is offline, and none at all after the server refused the token or closed
 * with a code that retrying cannot fix.
 */
export class RoomConnection {
  readonly #provider: WebsocketProvider
  readonly #unsynced: UnsyncedChanges
  readonly #requests: AppRequests
  // A room connects as soon as its offline copy is loaded: it is not offline meanwhile.
  #status: RoomStatus = 'connecting'
  /** What stopped connecting for good (status `'failed'`), until `start`. */
  #error: SymphonyClientError | null = null
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #openTimer: ReturnType<typeof setTimeout> | undefined
  /** Resets the backoff once a connection after a back-off close (`shouldBackOff`) has lasted. */
  #resetTimer: ReturnType<typeof setTimeout> | undefined
  /** The server's last close asked to come back later: waits keep growing until a connection lasts. */
  #backingOff = false
  /** Bumped by every attempt and by `stop`, so a late token or probe answer is ignored. */
  #attempt = 0
  #opened = false
  #stopped = true
  #destroyed = false
  #token: string | null = null
  #tokenErrorReported = false
  #readOnlyReported = false
  /** The token the server said was read-only: no events are sent with it (the server closes on one). */
  #readOnlyToken: string | null | undefined

  constructor(private readonly options: RoomConnectionOptions) {
    // The provider appends the name to the URL as it is: encoded here, any name survives.
    const provider = new WebsocketProvider(options.serverUrl, roomPath(options.room), options.doc, {
      connect: false,
      awareness: options.awareness,
      WebSocketPolyfill: options.WebSocket,
      disableBc: !options.crossTab,
      // Every close comes back to us (see #closed); the provider never schedules its own retry.
      shouldReconnect: () => false,
    })
    sendOwnPresenceOnly(provider, options.awareness)
    provider.messageHandlers[MESSAGE_BROADCAST] = (_encoder, decoder) => {
      let data: unknown
      let from: EventSender | null = null
      try {
        data = JSON.parse(new TextDecoder().decode(decoding.readVarUint8Array(decoder)))
        // Stamped by the server after the payload; servers from before that send none.
        if (decoding.hasContent(decoder)) {
          from = decodeEventSender(decoding.readVarString(decoder))
          if (!from) return
        }
      } catch {
        return // the server checks events; one that still does not parse is dropped
      }
      options.onEvent(data, from)
    }
    provider.messageHandlers[MESSAGE_INCARNATION] = (_encoder, decoder) => {
      options.onIncarnation(decoding.readVarUint(decoder))
    }
    provider.messageHandlers[messageAuth] = (_encoder, decoder) =>
      readAuthMessage(decoder, options.doc, (_doc, reason) => this.#readOnly(reason))
    provider.on('status', ({ status }) => {
      if (status !== 'connected') return
      clearTimeout(this.#openTimer)
      this.#opened = true
      this.#setStatus(provider.synced ? 'synced' : 'connected')
    })
    provider.on('sync', (synced) => {
      if (!synced || !provider.wsconnected) return
      this.#unsynced.synced()
      this.#resetBackoffWhenStable()
      this.#tokenErrorReported = false
      this.#setStatus('synced')
    })
    provider.on('connection-close', (event) => {
      this.#unsynced.disconnected()
      this.#requests.disconnected()
      void this.#closed(event)
    })
    this.#provider = provider
    this.#unsynced = new UnsyncedChanges(provider, options.doc, options.onUnsynced)
    this.#requests = new AppRequests(provider)
    // globalThis, not window: workers get online/offline events too.
    globalThis.addEventListener?.('online', this.#online)
    globalThis.addEventListener?.('offline', this.#offline)
  }

  get status(): RoomStatus {
    return this.#status
  }

  /** The error that stopped connecting for good, while the status is `'failed'`. */
  get error(): SymphonyClientError | null {
    return this.#error
  }

  /**
   * Sends an event to everyone else in the room now; false when not connected, or when the token
   * is read-only (it is dropped).
   */
  sendEvent(data: unknown): boolean {
    const ws = this.#provider.ws
    if (ws?.readyState !== 1 || !this.#provider.synced) return false
    if (this.#readOnlyToken === this.#token) return false
    const frame = encoding.createEncoder()
    encoding.writeVarUint(frame, MESSAGE_BROADCAST)
    encoding.writeVarUint8Array(frame, new TextEncoder().encode(JSON.stringify(data)))
    ws.send(encoding.toUint8Array(frame))
    return true
  }

  /** Sends an app message to the server's `type` handler; resolves with its reply (see `AppRequests`). */
  request(type: string, data: unknown, timeoutMs: number): Promise<unknown> {
    return this.#requests.request(type, data, timeoutMs)
  }

  /** Whether local edits wait for the server's acknowledgement. */
  get unsynced(): boolean {
    return this.#unsynced.unsynced
  }

  /** Starts connecting (again, after a final error). */
  start(): void {
    if (this.#destroyed) return
    this.#stopped = false
    this.#error = null
    this.#tokenErrorReported = false
    this.#readOnlyReported = false
    this.#backingOff = false
    this.options.schedule.reset()
    // Other tabs sync over the BroadcastChannel whether or not the server is reachable.
    this.#provider.connectBc()
    void this.#connect()
  }

  destroy(): void {
    this.#destroyed = true
    this.#stop('offline')
    globalThis.removeEventListener?.('online', this.#online)
    globalThis.removeEventListener?.('offline', this.#offline)
    this.#unsynced.destroy()
    this.#provider.destroy()
  }

  async #connect(): Promise<void> {
    clearTimeout(this.#retryTimer)
    if (this.#stopped || this.#provider.ws !== null) return
    // Offline: wait for the browser's 'online' event instead of burning attempts.
    if (isBrowserOffline()) return this.#setStatus('offline')
    const attempt = ++this.#attempt
    this.#opened = false
    this.#setStatus('connecting')
    this.#openTimer = setTimeout(() => this.#abandon(attempt), this.options.connectTimeoutMs)
    let token: string | null
    try {
      token = await this.options.tokens()
    } catch (error) {
      if (attempt !== this.#attempt) return
      clearTimeout(this.#openTimer)
      if (isAuthDenied(error)) {
        const reason = (error as Error).message
        const denied = new SymphonyClientError(
          'AUTH_DENIED',
          `getToken denied access: ${reason}`,
          {},
          { cause: error },
        )
        return this.#fail(denied)
      }
      if (!this.#tokenErrorReported) {
        this.#tokenErrorReported = true
        const reason = error instanceof Error ? error.message : String(error)
        this.options.onError(
          new SymphonyClientError('TOKEN_UNAVAILABLE', `getToken failed: ${reason}`),
          false,
        )
      }
      return this.#retryLater()
    }
    if (attempt !== this.#attempt || this.#stopped) return
    this.#token = token
    this.#provider.params = {
      [SYNC_STATUS_PARAM]: '1',
      [BROADCAST_PARAM]: '1',
      [INCARNATION_PARAM]: String(this.options.incarnation() ?? 'none'),
    }
    try {
      // The token goes in Sec-WebSocket-Protocol, never in the URL: access logs keep URLs.
      this.#provider.protocols = offeredProtocols(token)
      this.#provider.connect()
    } catch (error) {
      // The WebSocket constructor throws only for what no retry fixes: a malformed URL, ws://
      // from an https:// page, or a token that is not a JWT (offeredProtocols).
      this.#provider.shouldConnect = false
      const reason = error instanceof Error ? error.message : String(error)
      this.#fail(new SymphonyClientError('CONNECTION_FAILED', `cannot open a WebSocket: ${reason}`))
    }
  }

  /** An attempt that neither opened nor failed in time (a hung getToken or handshake). */
  #abandon(attempt: number): void {
    if (attempt !== this.#attempt || this.#stopped || this.#opened) return
    this.#attempt++
    // Closing a socket that is still opening comes back through #closed, which retries.
    if (this.#provider.ws) this.#provider.disconnect()
    else this.#retryLater()
  }

  /**
   * A sync resets the backoff, except after a close that asked to come back later (the server
   * short of memory, or busy): then only once the connection has lasted the longest wait, so a
   * crowd of clients the server keeps closing spreads out instead of coming straight back.
   */
  #resetBackoffWhenStable(): void {
    clearTimeout(this.#resetTimer)
    if (!this.#backingOff) {
      this.options.schedule.reset()
      return
    }
    this.#resetTimer = setTimeout(() => {
      this.#backingOff = false
      this.options.schedule.reset()
    }, this.options.schedule.maxDelayMs)
  }

  async #closed(event: CloseEvent | null): Promise<void> {
    // The provider would otherwise reconnect by itself after a close it started (its watchdog).
    this.#provider.shouldConnect = false
    clearTimeout(this.#openTimer)
    clearTimeout(this.#resetTimer)
    if (event && shouldBackOff(event.code)) this.#backingOff = true
    // Stopped: #stop says what the status is (a close it caused lands here at once).
    if (this.#stopped) return
    this.#setStatus('offline')
    if (event?.code === CloseCode.ReadOnly) this.#readOnly(event.reason || 'read-only access', event.code)
    if (event?.code === CloseCode.RoomDeleted) {
      // Its content is cleared next: nothing made here is waiting for a server any more.
      this.#unsynced.discard()
      return this.#fail(
        new SymphonyClientError('ROOM_DELETED', 'the room was deleted', { closeCode: event.code }),
      )
    }
    if (event && this.#opened && !shouldReconnect(event.code)) {
      const name = closeCodeName(event.code)
      const message = `the server closed the connection: ${event.code} ${name}${event.reason ? `: ${event.reason}` : ''}`
      return this.#fail(new SymphonyClientError('CLOSED_BY_SERVER', message, { closeCode: event.code }))
    }
    // The token ran out while connected: come straight back with a fresh one (#connect asks).
    if (event?.code === CloseCode.TokenExpired) this.options.schedule.reset()
    if (event && !this.#opened) {
      // Never opened: a refused token, or a server that is simply away? Only the server knows.
      const attempt = this.#attempt
      const verdict = await checkAccess(
        this.options.serverUrl,
        this.options.room,
        this.#token,
        this.options.fetch,
      )
      if (attempt !== this.#attempt || this.#stopped) return
      if (verdict.kind === 'refused') {
        const { status, serverCode, message } = verdict
        return this.#fail(
          new SymphonyClientError('AUTH_REFUSED', `the server refused the token: ${message}`, {
            status,
            serverCode,
          }),
        )
      }
    }
    this.#retryLater()
  }

  #retryLater(): void {
    this.#setStatus('offline')
    // Offline: the browser's 'online' event reconnects; timers would only burn attempts.
    if (this.#stopped || isBrowserOffline()) return
    this.#retryTimer = setTimeout(() => void this.#connect(), this.options.schedule.nextDelay())
  }

  /** Stops for good: status `'failed'` with `error` readable before anyone hears of either. */
  #fail(error: SymphonyClientError): void {
    this.#error = error
    this.#stop('failed')
    this.options.onError(error, true)
  }

  #stop(status: 'offline' | 'failed'): void {
    this.#stopped = true
    this.#attempt++
    clearTimeout(this.#retryTimer)
    clearTimeout(this.#openTimer)
    clearTimeout(this.#resetTimer)
    if (this.#provider.ws) this.#provider.disconnect()
    this.#setStatus(status)
  }

  #readOnly(reason: string, closeCode?: number): void {
    this.#readOnlyToken = this.#token
    if (this.#readOnlyReported) return
    this.#readOnlyReported = true
    const details = closeCode === undefined ? {} : { closeCode }
    this.options.onError(
      new SymphonyClientError('READ_ONLY', `edits are not saved: ${reason}`, details),
      false,
    )
  }

  readonly #online = (): void => {
    if (this.#stopped) return
    this.options.schedule.reset()
    void this.#connect()
  }

  readonly #offline = (): void => {
    if (this.#stopped) return // not connecting: nothing to drop, and a failed room stays 'failed'
    // Browsers keep a dead socket open for a long while after the network goes; drop it now.
    clearTimeout(this.#retryTimer)
    clearTimeout(this.#openTimer)
    this.#attempt++
    if (this.#provider.ws) this.#provider.disconnect()
    // disconnect() also leaves the BroadcastChannel; tabs keep syncing with each other offline.
    this.#provider.connectBc()
    this.#setStatus('offline')
  }

  #setStatus(status: RoomStatus): void {
    if (status === this.#status) return
    this.#status = status
    this.options.onStatus(status)
  }
}

function isBrowserOffline(): boolean {
  return typeof navigator !== 'undefined' && navigator.onLine === false
}
