import { type Awareness, removeAwarenessStates } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { clearDocument } from './clear-document.js'
import { SymphonyClientError } from './errors.js'
import { createHistory, type History, type SharedType } from './history.js'
import { Listeners } from './listeners.js'
import { openOfflineStore } from './offline-store.js'
import { Presence } from './presence.js'
import { RoomAwareness } from './room-awareness.js'
import { type ConnectionSettings, RoomConnection, type RoomStatus } from './room-connection.js'
import type { EventSender } from './wire/event-sender.js'

/**
 * What `room.on` can listen to.
 *
 * @example
 * room.on('synced', () => hideSpinner())
 */
export interface RoomEvents {
  /** The status changed. */
  status: (status: RoomStatus) => void
  /** The room caught up with the server (after every (re)connection). */
  synced: () => void
  /** Something needs the app's attention; see `SymphonyClientError.code`. */
  error: (error: SymphonyClientError) => void
  /** Local edits began (true) or ceased (false) to wait for the server; see `hasUnsyncedChanges`. */
  unsynced: (unsynced: boolean) => void
  /**
   * Another user in the room broadcast an event (`room.broadcast`). `from` is who sent it, as
   * the server knows them from their token (a client cannot claim another's name); null only
   * from a server older than this client.
   */
  event: (data: unknown, from: EventSender | null) => void
}

type SyncWaiter = { resolve: () => void; reject: (error: SymphonyClientError) => void }

/**
 * `'synchronized'` once the room has synced with the server and it holds every edit made here;
 * `'synchronizing'` before the first sync (whatever stopped it) and while edits wait for the server.
 *
 * @example
 * const badge: SyncStatus = room.syncStatus
 */
export type SyncStatus = 'synchronizing' | 'synchronized'

/** The origin of the transaction that empties a deleted room: no history tracks it. */
const ROOM_DELETED_ORIGIN = Symbol('room deleted')

/** How a client opens a room; built by `createClient`. */
export interface RoomSetup extends ConnectionSettings {
  id: string
  /** The IndexedDB database name, or null to keep the room in memory only. */
  offlineStoreName: string | null
  /** The server's `MAX_PRESENCE_BYTES`: bigger presence states are refused here. */
  maxPresenceBytes: number
}

/**
 * One shared document and the people in it. Get one from `client.enter(roomId)`.
 *
 * @example
 * const room = client.enter('board-1')
 * const todos = room.list<string>('todos')
 * todos.push(['write the quick start'])
 * await room.whenSynced()
 */
export class Room<P extends object = Record<string, unknown>> {
  /** The room's name on the server. */
  readonly id: string
  /** The Yjs document, for anything the helpers below do not cover. */
  readonly doc = new Y.Doc()
  /** Who else is here; see `Presence`. */
  readonly presence: Presence<P>
  /**
   * The room's y-protocols `Awareness`, for editor bindings that take one (Tiptap's
   * CollaborationCaret takes the room itself as its `provider`, for `room.awareness`). It is the
   * state `presence` reads and writes: a binding's `user` and `cursor` fields show in
   * `presence.others()`, and `presence.set` keeps them. A state bigger than `maxPresenceBytes` is
   * not shared: the previous one stays and the room reports `PRESENCE_TOO_BIG`.
   *
   * @example
   * room.awareness.setLocalStateField('user', { name: 'Ada', color: '#f783ac' })
   * const view = new EditorView({ extensions: [yCollab(room.text('code'), room.awareness)] })
   */
  readonly awareness: Awareness

  readonly #events = new Listeners<RoomEvents>()
  readonly #connection: RoomConnection
  readonly #histories = new Set<History>()
  readonly #closeStore: () => Promise<void> = async () => {}
  readonly #clearStore: () => Promise<void> = async () => {}
  /** The server deleted the room: this copy must never sync its old content back. */
  #deleted = false
  /** The room incarnation this copy belongs to (null: it never synced), kept with the offline copy. */
  #incarnation: number | null = null
  #keepIncarnation: (incarnation: number) => Promise<void> = async () => {}
  /** `ROOM_LEFT`, once the room is left; `error` and `whenSynced` give it from then on. */
  #leftError: SymphonyClientError | null = null
  /** The room synced with the server at least once. */
  #everSynced = false
  #left = false
  readonly #waiters = new Set<SyncWaiter>()

  constructor(setup: RoomSetup) {
    const { id, offlineStoreName, maxPresenceBytes, ...settings } = setup
    this.id = id
    this.awareness = new RoomAwareness(this.doc, {
      maxBytes: maxPresenceBytes,
      onRefused: (error) => this.#events.emit('error', error),
    })
    this.presence = new Presence<P>(this.awareness)
    // The offline store comes before the connection, so its update listener runs before the
    // provider's: each change is queued to IndexedDB before it is sent. Connecting waits for the
    // stored state (or its failure), so the first sync already carries the edits made offline.
    let stored = Promise.resolve()
    if (offlineStoreName) {
      const store = openOfflineStore(offlineStoreName, this.doc)
      this.#closeStore = store.close
      this.#clearStore = store.clear
      this.#keepIncarnation = store.setIncarnation
      stored = store.ready.then(async () => {
        this.#incarnation = await store.incarnation()
      })
      stored = stored.catch((error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error)
        const failure = new SymphonyClientError('OFFLINE_STORE_FAILED', `IndexedDB: ${reason}; online only`)
        this.#events.emit('error', failure)
      })
    }
    this.#connection = new RoomConnection({
      ...settings,
      room: id,
      doc: this.doc,
      awareness: this.awareness,
      onStatus: (status) => {
        if (status === 'synced') this.#everSynced = true
        this.#events.emit('status', status)
        if (status !== 'synced') return
        this.#settleWaiters((waiter) => waiter.resolve())
        this.#events.emit('synced')
      },
      onError: (error, final) => {
        if (error.code === 'ROOM_DELETED') this.#clearDeleted()
        if (final) this.#settleWaiters((waiter) => waiter.reject(error))
        this.#events.emit('error', error)
      },
      onUnsynced: (unsynced) => this.#events.emit('unsynced', unsynced),
      onEvent: (data, from) => this.#events.emit('event', data, from),
      incarnation: () => this.#incarnation,
      onIncarnation: (incarnation) => {
        // Never lowered: a server behind the store refuses a later copy rather than naming its own.
        if (this.#incarnation !== null && incarnation <= this.#incarnation) return
        this.#incarnation = incarnation
        void this.#keepIncarnation(incarnation).catch(() => {})
      },
    })
    void stored.then(() => {
      if (!this.#left) this.#connection.start()
    })
  }

  /**
   * `'connecting'`, `'connected'` (open, catching up), `'synced'`, `'offline'` (waiting to
   * retry, or the browser is offline) or `'failed'` (stopped for good: see `error`).
   */
  get status(): RoomStatus {
    return this.#connection.status
  }

  /**
   * The error that stopped connecting for good (`AUTH_DENIED`, `AUTH_REFUSED`, `ROOM_DELETED`…,
   * and `ROOM_LEFT` once left), or null while the room connects or retries.
   *
   * @example
   * if (room.status === 'failed' && room.error?.code === 'AUTH_DENIED') showSignIn()
   */
  get error(): SymphonyClientError | null {
    return this.#leftError ?? this.#connection.error
  }

  /**
   * `'synchronized'` once the room has synced and the server holds every edit made here, else
   * `'synchronizing'`: before the first sync (so a room whose token is refused, or that never
   * reached the server, never says synchronized) and while edits wait (`hasUnsyncedChanges()`).
   * It changes with a `'status'` or an `'unsynced'` event.
   *
   * @example
   * room.on('unsynced', () => (badge.textContent = room.syncStatus === 'synchronized' ? 'Saved' : 'Saving…'))
   */
  get syncStatus(): SyncStatus {
    return this.#everSynced && !this.hasUnsyncedChanges() ? 'synchronized' : 'synchronizing'
  }

  /**
   * Sends `data` (any JSON) to everyone else in the room, on every server, now: a reaction, a
   * "saved" notice, a ping. Never stored; a user who is not connected misses it. Returns false
   * (and drops it) while this room is not connected, or once the server said the token is
   * read-only (only writers may broadcast). The server caps an event like a presence state
   * (16 KiB by default) and closes a connection that sends a bigger one. Receivers learn who sent
   * it from the server, never from `data`.
   *
   * @example
   * room.broadcast({ type: 'emoji', emoji: '🎉' })
   * room.on('event', (event, from) => showReaction(event, from?.name))
   */
  broadcast(data: unknown): boolean {
    return this.#connection.sendEvent(data)
  }

  /**
   * Sends `data` (any JSON) to the handler the server's app defines for `type`
   * (`createSyncServer({ hooks: { messages } })`) and resolves with its answer. Rejects with
   * `MESSAGE_REFUSED` (`details.serverCode`: `MESSAGE_REFUSED` with the app's reason,
   * `UNKNOWN_MESSAGE_TYPE`, `MESSAGE_FAILED`, `HOOK_TIMEOUT`, `TOO_MANY_MESSAGES`), `NOT_CONNECTED` (nothing sent), or
   * `NO_REPLY` (the connection closed, or `timeoutMs` passed, first: it may have been handled).
   * The server caps a message like a presence state (16 KiB by default).
   *
   * @example
   * const comment = await room.request('comment.add', { text: 'Looks good' })
   */
  request(
    type: string,
    data: unknown,
    { timeoutMs = 10_000 }: { timeoutMs?: number } = {},
  ): Promise<unknown> {
    return this.#connection.request(type, data, timeoutMs)
  }

  /**
   * Whether edits made here (or loaded from the offline store) are not yet held by the server:
   * true from a change until the server acknowledges it, and for as long as the room is offline
   * or read-only. Use it for a "Saving…" badge, or to warn before the page closes.
   *
   * @example
   * window.addEventListener('beforeunload', (e) => { if (room.hasUnsyncedChanges()) e.preventDefault() })
   */
  hasUnsyncedChanges(): boolean {
    return this.#connection.unsynced
  }

  /**
   * The shared map called `name` (created on first use).
   *
   * @example
   * const shapes = room.map<{ x: number; y: number }>('shapes')
   * shapes.set('a', { x: 1, y: 2 })
   */
  map<T = unknown>(name: string): Y.Map<T> {
    return this.doc.getMap<T>(name)
  }

  /**
   * The shared list (Y.Array) called `name`.
   *
   * @example
   * room.list<string>('todos').push(['milk'])
   */
  list<T = unknown>(name: string): Y.Array<T> {
    return this.doc.getArray<T>(name)
  }

  /**
   * The shared rich text called `name`.
   *
   * @example
   * room.text('notes').insert(0, 'Hello')
   */
  text(name: string): Y.Text {
    return this.doc.getText(name)
  }

  /**
   * Runs `fn` as one change: peers see all of it or none, and undo reverts it as one step.
   *
   * @example
   * room.transact(() => {
   *   shape.set('x', 10)
   *   shape.set('y', 20)
   * })
   */
  transact(fn: () => void): void {
    this.doc.transact(fn, this)
  }

  /**
   * Undo/redo over `types` (default: every type of the room, those made later too) that reverts
   * only this user's changes, never a peer's.
   *
   * @example
   * const history = room.history(room.map('shapes'))
   * undoButton.onclick = () => history.undo()
   */
  history(types?: SharedType | SharedType[]): History {
    // null is the origin of plain edits; `this` is the origin of room.transact.
    const origins = new Set([null, this])
    const history = createHistory(types ?? this.doc, origins, () => this.#histories.delete(history))
    this.#histories.add(history)
    return history
  }

  /**
   * Listens to `'status'`, `'synced'`, `'unsynced'`, `'event'` or `'error'`. Returns the function that stops listening.
   *
   * @example
   * const stop = room.on('status', (status) => (badge.textContent = status))
   */
  on<E extends keyof RoomEvents>(event: E, listener: RoomEvents[E]): () => void {
    return this.#events.on(event, listener)
  }

  /**
   * Resolves when the room is synced with the server (at once if it is). Rejects when connecting
   * stopped for good (token refused, a final close) or the room was left.
   *
   * @example
   * await room.whenSynced()
   */
  whenSynced(): Promise<void> {
    if (this.status === 'synced') return Promise.resolve()
    const error = this.error
    if (error) return Promise.reject(error)
    return new Promise((resolve, reject) => this.#waiters.add({ resolve, reject }))
  }

  /**
   * The room was deleted on the server: its offline copy goes, the document is emptied (the app's
   * types and observers see an empty room), and no history can bring the content back.
   */
  #clearDeleted(): void {
    this.#deleted = true
    // First: the store stops recording at once, so the emptying below is never stored.
    void this.#clearStore().catch(() => {})
    clearDocument(this.doc, ROOM_DELETED_ORIGIN)
    for (const history of this.#histories) history.clear()
  }

  #settleWaiters(settle: (waiter: SyncWaiter) => void): void {
    const waiters = [...this.#waiters]
    this.#waiters.clear()
    for (const waiter of waiters) settle(waiter)
  }

  /**
   * Starts connecting again after an error stopped it (for example with a new token from
   * `getToken` after the user signed in again). Not after `ROOM_DELETED`: leave and enter the
   * room again for a new, empty one.
   *
   * @example
   * room.on('error', async (e) => { if (e.code === 'AUTH_REFUSED') { await signIn(); room.reconnect() } })
   */
  reconnect(): void {
    if (this.#left || this.#deleted) return
    this.#connection.start()
  }

  /** Called by `client.leave`: says goodbye to peers, disconnects, closes the offline store. */
  async close(): Promise<void> {
    if (this.#left) return
    this.#left = true
    const error = new SymphonyClientError('ROOM_LEFT', `room "${this.id}" was left`)
    this.#leftError = error
    this.#settleWaiters((waiter) => waiter.reject(error))
    // Peers drop this user's cursor now rather than after the 30 s awareness timeout. The
    // awareness id, not the document's: Yjs gives the document a new one on a clash.
    removeAwarenessStates(this.awareness, [this.awareness.clientID], 'left')
    for (const history of this.#histories) history.destroy()
    this.#connection.destroy()
    this.awareness.destroy()
    await this.#closeStore().catch(() => {})
    this.doc.destroy()
    this.#events.clear()
  }
}
