import { CloseCode, type EventSender } from '@symphony/client/wire'
import * as Y from 'yjs'
import { deferred } from '../deferred.js'
import { ProtocolError } from '../errors.js'
import {
  checkBroadcast,
  decodeMessage,
  encodeAwarenessEntries,
  encodeRelayedEvent,
  encodeSyncStatus,
  encodeSyncStep1,
  encodeUpdate,
  isEmptyUpdate,
  type Message,
  unhandledMessage,
} from '../protocol/codec.js'
import type { AppMessages } from './app-messages.js'
import { absorbState, SLICE_ABOVE_BYTES } from './apply-in-slices.js'
import { type Author, writeBinding } from './author-binding.js'
import { BigUpdates } from './big-updates.js'
import { changeOriginOf, PEER_ORIGIN } from './change-origin.js'
import { ClientUpdateChecks } from './client-update-checks.js'
import { DocumentBounds } from './document-bounds.js'
import { DocumentEncodings } from './document-encodings.js'
import { type MemoryCharges, type MemoryHolder, UNBOUNDED_MEMORY } from './memory-budget.js'
import type { PresenceTable } from './presence-table.js'
import { restoreOnWorker } from './restore-on-worker.js'
import { roomHookParts } from './room-hook-parts.js'
import type { RoomInit, RoomObserver, RoomOptions } from './room-init.js'
import { RoomMailbox } from './room-mailbox.js'
import type { MemberRoom, RoomMember } from './room-member.js'
import { RoomPresence } from './room-presence.js'
import { type ApiOrigin, apiWrite, type Write, type Writer } from './update-origin.js'
import { WritePipeline } from './write-pipeline.js'

/** Transaction origin of the app's first content for a new room (`onLoad`). */
const SEEDED = Symbol('seeded')

const UNOBSERVED: RoomObserver = { messageReceived() {}, updateHandled() {} }

/**
 * One loaded room, on its owner: its document, its presence, and the connections editing it (this
 * server's clients and those other servers relay). Everything a client sends is applied here and
 * forwarded as the very bytes that arrived to the other connections.
 */
export class Room implements MemberRoom, MemoryHolder {
  readonly name: string
  readonly doc: Y.Doc
  readonly connections = new Set<RoomMember>()
  readonly #presence: RoomPresence
  readonly #checks: ClientUpdateChecks
  readonly #writes: WritePipeline
  /** The app's own message types (`hooks.messages`), if it has any. */
  readonly #appMessages: AppMessages | null
  /** Grows with every applied change; the snapshot writer compares it with what it saved. */
  version = 0
  /** The document's size, structs and memory, bounded and charged. */
  readonly #bounds: DocumentBounds
  #shedding = false
  #destroyed = false
  readonly #encodings: DocumentEncodings
  readonly #bigUpdates: BigUpdates
  readonly #options: RoomOptions
  readonly #journal: RoomInit['journal']
  readonly #onChange: () => void
  readonly #onShed: () => void
  readonly #observer: RoomObserver
  readonly #events: RoomInit['events']
  readonly #memory: MemoryCharges
  readonly #mailbox: RoomMailbox
  /** Resolved once the room ends (`end`): writes posted and not started are not run. */
  readonly #ended = deferred()
  #hasEnded = false

  constructor(init: RoomInit) {
    const { name, doc, options, journal, events } = init
    this.#mailbox = init.mailbox ?? new RoomMailbox()
    this.#memory = init.memory ?? UNBOUNDED_MEMORY
    this.#presence = new RoomPresence(this.#memory, options.maxPresenceBytes)
    this.name = name
    this.doc = doc
    this.#encodings = new DocumentEncodings(doc, (state) => this.#bounds.measured(state))
    this.#bounds = new DocumentBounds({
      doc,
      loadedBytes: init.loadedBytes,
      loadedBuiltBytes: init.loadedBuiltBytes ?? 0,
      ceilings: options,
      memory: this.#memory,
      encode: () => this.encodeState(),
    })
    this.#memory.track(this, 'room')
    this.#options = options
    this.#journal = journal
    this.#onChange = init.onChange
    this.#onShed = init.onShed ?? (() => {})
    this.#observer = init.observer ?? UNOBSERVED
    this.#events = events
    this.#checks = new ClientUpdateChecks({
      doc,
      budget: options.waiting,
      enabled: options.bindAuthors ?? false,
      ownerOf: (clientId) => this.#presence.ownerOf(clientId),
      write: (update) =>
        writeBinding(update, {
          journal,
          apply: (binding, origin) => this.#writes.apply(binding, origin),
          broadcast: (binding) => this.#broadcast(encodeUpdate(binding), null),
          ended: this.#ended.promise,
        }),
    })
    const hookParts = roomHookParts({
      room: name,
      hooks: init.hooks,
      maxBytes: options.maxPresenceBytes,
      memory: this.#memory,
      events,
      logger: init.logger,
      state: () => this.encodeState(),
      broadcast: (payload, sender) => this.broadcastEvent(payload, sender),
    })
    this.#appMessages = hookParts.appMessages
    this.#writes = new WritePipeline({
      doc,
      bounds: this.#bounds,
      checks: this.#checks,
      approval: hookParts.approval,
      buildPace: init.buildPace ?? null,
      journal,
      post: (step) => this.#post(step),
      changed: (bytes, built) => this.#changed(bytes, built),
      forward: (write) => this.#forward(write),
    })
    this.#bigUpdates = new BigUpdates({
      doc,
      bounds: this.#bounds,
      checks: this.#checks,
      approval: hookParts.approval,
      journal,
      memory: this.#memory,
      post: async (step) => (await this.#post(step)) ?? false,
      apply: (slice, writer) => this.#writes.apply(slice, writer, 0),
    })
  }

  /** Starts syncing a connection: our state vector, so it sends what we lack, and who is here. */
  join(connection: RoomMember): void {
    if (this.#shedding) {
      // Unloading to free memory: held before it was shed, so not refused on the way in.
      if (this.#memory.documents() !== 'within') {
        connection.close(CloseCode.TryAgainLater, "the server's memory for documents is full: retry later")
        return
      }
      this.#shedding = false // let in again, as the documents fit by now: sheddable again
      this.#memory.track(this, 'room')
    }
    this.connections.add(connection)
    connection.send(encodeSyncStep1(Y.encodeStateVector(this.doc)))
    const present = this.presence.presentFrame()
    if (present) connection.send(present)
  }

  /** Removes a connection and the presence it owned (no ghost cursors). */
  leave(connection: RoomMember): void {
    if (!this.connections.delete(connection)) return
    const removal = this.#presence.left(connection)
    if (removal) this.#broadcast(removal, null)
  }

  /**
   * Handles one frame from a local client. Throws (or, for a big update applied across turns,
   * returns a promise that rejects with) `ProtocolError`, `DocumentTooLargeError`,
   * `PendingLimitError` or `MessageTooBigError` for what the client sent (`ServerBusyError`: a big
   * update cannot be taken now). Any other error is the server's own fault and is left as it is,
   * so it is never blamed on the client.
   */
  receive(connection: RoomMember, frame: Uint8Array): Promise<void> | undefined {
    const receivedAt = performance.now()
    let message: Message
    try {
      message = decodeMessage(frame)
    } catch (error) {
      this.#observer.messageReceived('unknown')
      throw error
    }
    this.#observer.messageReceived(message.kind)
    return this.#dispatch(message, connection, frame, receivedAt)
  }

  /**
   * The one handler of every message kind: a kind added to `Message` and left out here fails to
   * compile (the `never` below).
   */
  #dispatch(
    message: Message,
    connection: RoomMember,
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> | undefined {
    switch (message.kind) {
      case 'sync-step1': {
        // Each answer encodes the whole difference; a client may not ask in a tight loop.
        if (!connection.takeRoomRequest()) {
          connection.close(CloseCode.RateLimited, 'sync requests too frequent')
          return
        }
        const stateVector = this.#encodings.checked(message.stateVector)
        connection.answerSync(() => (this.#destroyed ? null : this.#encodings.syncAnswer(stateVector)))
        return
      }
      case 'sync-step2':
      case 'update':
        // Every client answers our sync step 1, usually with nothing: not a write attempt.
        if (isEmptyUpdate(message.update)) return
        if (!connection.canWrite) {
          connection.denyWrite()
          return
        }
        return this.#applyWrite({
          writer: connection,
          update: message.update,
          frame: message.kind === 'update' ? frame : null,
          receivedAt,
        })
      case 'awareness': {
        this.#presence.received(connection, message.update)
        // A client alone here hears nothing else, and its provider drops a connection silent
        // for 30 s: it gets its own state back (and ignores it: same clock). With company, the
        // others' presence renewals (every 15 s at most) keep it alive, and the echo is saved.
        this.#broadcast(frame, this.connections.size === 1 ? null : connection)
        return
      }
      case 'query-awareness':
        if (connection.takeRoomRequest())
          connection.send(this.presence.presentFrame() ?? encodeAwarenessEntries([]))
        else connection.close(CloseCode.RateLimited, 'presence queries too frequent')
        return
      case 'broadcast': {
        // Only writers speak to the room: a viewer must not announce "approved" to everyone.
        if (!connection.canWrite) {
          connection.close(CloseCode.ReadOnly, 'read-only access: broadcast events are refused')
          return
        }
        const { id: connectionId, identity } = connection
        this.broadcastEvent(
          message.payload,
          { connectionId, userId: identity.userId, name: identity.name },
          connection,
        )
        return
      }
      case 'app':
        // Answered to its sender by the app's handler.
        if (!this.#appMessages) throw new ProtocolError('this server defines no app messages')
        this.#appMessages.receive(connection, message.payload)
        return
      case 'sync-status':
        // Frames are handled in order, so every earlier one is applied; answered once durable
        // (journaled and confirmed, or in a saved snapshot): the client shows "saved" on it.
        // Never for a connection whose writes were refused: the server does not hold its edits.
        if (connection.writeDenied) return
        connection.answerSyncStatus(this.durable(), encodeSyncStatus(message.payload))
        return
      case 'auth':
        return
      default:
        return unhandledMessage(message)
    }
  }

  /**
   * Applies `update` from `origin`, with every check a client's update gets. The REST API writes
   * here, under `API_SUBJECT`, as no connection. Throws, or returns a promise that rejects, as
   * `receive` does.
   */
  applyUpdate(update: Uint8Array, origin: ApiOrigin): Promise<void> | undefined {
    this.#observer.messageReceived('update')
    if (isEmptyUpdate(update)) return
    return this.#applyWrite(apiWrite(origin, update))
  }

  /**
   * Makes the document saved state `version`'s content (`restoreUpdate`, made off this thread from
   * the room as it is then), written as the REST API writes, in one step of the room's mailbox: two
   * restores made from one state would each bring back what was deleted since, twice.
   */
  restore<T>(
    version: Uint8Array,
    origin: ApiOrigin & { kind: 'restore' },
    /** What follows in the same step (its save): restores follow each other whole. */
    then: () => Promise<T>,
  ): Promise<T | undefined> {
    return this.#post(async () => {
      const update = await restoreOnWorker(this.encodeState(), version)
      this.#observer.messageReceived('update')
      if (!isEmptyUpdate(update)) await this.#writeInStep(apiWrite(origin, update))
      return then()
    })
  }

  /** A writer's update: a big one applied a slice per turn, any other at once unless it waits. */
  #applyWrite(write: Write): Promise<void> | undefined {
    if (write.update.length > SLICE_ABOVE_BYTES)
      return this.#bigUpdates.apply(write.writer, write.update).then((changed) => {
        if (changed) this.#forward(write)
      })
    return this.#writes.write(write)
  }

  /** `#applyWrite`, from a step already running in the mailbox: nothing posted, all of it here. */
  async #writeInStep(write: Write): Promise<void> {
    if (write.update.length > SLICE_ABOVE_BYTES) {
      if (await this.#bigUpdates.applyInStep(write.writer, write.update)) this.#forward(write)
      return
    }
    return this.#writes.writeInStep(write)
  }

  /** `document.changed` for a change of `writer`'s (null: an earlier owner's snapshot); nothing built if nobody listens. */
  #emitChange(writer: Writer | null): void {
    const events = this.#events
    if (!events?.listens('document.changed')) return
    const origin = writer ? changeOriginOf(writer) : PEER_ORIGIN
    events.emit({ type: 'document.changed', room: this.name, origin, document: this.doc, at: Date.now() })
  }

  /** Resolves once every update applied from this server's clients so far is durable. */
  durable(): Promise<void> {
    return this.#journal.durable()
  }

  /** What a holder of `stateVector` lacks, as one update. Throws `ProtocolError` for a bad vector. */
  encodeDiff(stateVector: Uint8Array): Uint8Array {
    return this.#encodings.diff(stateVector)
  }

  /** The document's encoded size when last measured, plus every update applied since. */
  get approximateBytes(): number {
    return this.#bounds.size
  }

  /** Takes `state` as the encoding of the document as it is now, made elsewhere (off this thread). */
  adoptEncodedState(state: Uint8Array): void {
    this.#encodings.adopt(state)
  }

  /** The whole state, including updates still waiting for missing dependencies (so they count). */
  encodeState(): Uint8Array {
    return this.#encodings.state()
  }

  /**
   * Merges a snapshot an earlier owner saved late (after this server loaded the room) into the
   * live document: a CRDT union, a slice per event-loop turn when it is big, what was new
   * forwarded to the connections. Resolves with whether anything changed.
   */
  async absorbStored(state: Uint8Array): Promise<boolean> {
    const forward = (update: Uint8Array) => this.#broadcast(encodeUpdate(update), null)
    const { changed, builtBytes } = await absorbState(this.doc, state, forward)
    if (changed && !this.#destroyed) {
      this.#changed(state.length, builtBytes)
      this.#emitChange(null)
    }
    return changed
  }

  /** It ends (deleted, or lost): it saves no more, so a write in its mailbox stops waiting for a save. */
  end(): void {
    this.#hasEnded = true
    this.#ended.resolve()
  }

  destroy(): void {
    this.end()
    this.#destroyed = true
    this.#presence.release()
    this.#bounds.release()
    this.#memory.forget(this)
    this.#encodings.changed()
    this.doc.destroy()
    this.connections.clear()
  }

  /**
   * The app's first content for a new room (`onLoad`), before any client joins: journaled like an
   * edit, so it is saved, and trusted (the app's own, not a client's: no check).
   */
  seed(update: Uint8Array): void {
    if (this.#writes.apply(update, SEEDED)) this.#journal.record(update)
  }

  /** Every binding of a client id to a token subject, by client id. */
  authors(): Author[] {
    return this.#checks.authors.authors()
  }

  /**
   * Runs `step` in the mailbox after the steps posted before it, or not at all (undefined) once the
   * room has ended (`end`): none is freed while a step runs, its end being a step too.
   */
  #post<T>(step: () => Promise<T>): Promise<T | undefined> {
    return this.#mailbox.post(() => (this.#hasEnded ? undefined : step()))
  }

  /** Sends a client's applied update to the room's other connections. */
  #forward({ writer, update, frame, receivedAt }: Write): void {
    // A sync step 2 (or a write with no frame) is forwarded as an update: same payload.
    this.#broadcast(frame ?? encodeUpdate(update), writer)
    this.#observer.updateHandled(receivedAt)
    this.#emitChange(writer)
  }

  #changed(bytes: number, built: number): void {
    this.#bounds.changed(bytes, built)
    this.version++
    this.#encodings.changed()
    this.#onChange()
  }

  /** What the room's document is charged. */
  get heldBytes(): number {
    return this.#bounds.heldBytes
  }

  /** How much its document's charge grew since it loaded: the budget unloads the rooms that grew the most first. */
  get grownBytes(): number {
    return this.#bounds.grownBytes
  }

  /** Who is here. */
  get presence(): PresenceTable {
    return this.#presence.table
  }

  /** Unloading to free the server's memory: no one joins while the documents are over their share. */
  get shedding(): boolean {
    return this.#shedding
  }

  /** Closes every connection, so the room saves and unloads at once, freeing its document. */
  shed(): void {
    this.#shedding = true
    this.#onShed()
    for (const connection of [...this.connections])
      connection.close(
        CloseCode.MemoryBudgetExceeded,
        'the server is short of memory: this room unloads; reconnect later',
      )
  }

  #broadcast(frame: Uint8Array, except: Writer | null): void {
    for (const connection of this.connections) {
      if (connection !== except) connection.send(frame)
    }
  }

  /**
   * Sends a broadcast event (JSON text) from `sender`, stamped with it, to the room's connections
   * that announced they understand events (but `except`); ephemeral, never stored.
   * `MessageTooBigError` or `ProtocolError` for a payload refused.
   */
  broadcastEvent(payload: Uint8Array, sender: EventSender, except: RoomMember | null = null): void {
    checkBroadcast(payload, this.#options.maxPresenceBytes)
    const frame = encodeRelayedEvent(payload, sender)
    for (const connection of this.connections) {
      if (connection !== except && connection.capabilities.has('events')) connection.send(frame)
    }
  }
}
