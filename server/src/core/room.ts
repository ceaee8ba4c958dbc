import { setTimeout as delay, setImmediate as nextTurn } from 'node:timers/promises'
import { CloseCode, type EventSender } from '@symphony/client/wire'
import * as Y from 'yjs'
import { DocumentTooLargeError, ProtocolError, ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import {
  boundedStateVector,
  checkBroadcast,
  decodeAwarenessUpdate,
  decodeMessage,
  encodeAwarenessEntries,
  encodeRelayedEvent,
  encodeSyncStatus,
  encodeSyncStep1,
  encodeSyncStep2,
  encodeUpdate,
  isEmptyStateVector,
  isEmptyUpdate,
  type Message,
} from '../protocol/codec.js'
import type { WaitingBudget } from '../protocol/update-guard.js'
import { contentCostOf, type ScannedUpdate, STRUCTS_PER_BYTE } from '../protocol/update-scan.js'
import { documentStructs, structsAdded } from '../protocol/update-structs.js'
import {
  clientCount,
  clockOf,
  holdsClient,
  waitingDeletions,
  waitingStructs,
} from '../protocol/yjs-internals.js'
import type { ServerHooks } from '../server-hooks.js'
import type { AppMessageQuota } from './app-message-quota.js'
import { AppMessages } from './app-messages.js'
import { applyInSlices, checkAndSlice, SLICE_ABOVE_BYTES } from './apply-in-slices.js'
import { applySentUpdate } from './apply-sent-update.js'
import { API_SUBJECT, type Author, type BindingSize, NO_BINDING } from './author-binding.js'
import { changeOriginOf, PEER_ORIGIN } from './change-origin.js'
import { type CheckedUpdate, ClientUpdateChecks } from './client-update-checks.js'
import type { CoreMetrics } from './core-metrics.js'
import { DocumentMemory } from './document-memory.js'
import type { EventStream } from './event-stream.js'
import {
  BIG_UPDATE_RESERVE_FACTOR,
  type MemoryCharges,
  type MemoryHolder,
  UNBOUNDED_MEMORY,
} from './memory-budget.js'
import type { BuildPace } from './pacing.js'
import { PresenceOwners } from './presence-owners.js'
import { PresenceTable } from './presence-table.js'
import type { RoomJournal } from './room-journal.js'
import type { MemberRoom, RoomMember } from './room-member.js'
import { SyncAnswers } from './sync-answers.js'
import { UpdateApproval } from './update-approval.js'
import type { ApiOrigin, Writer } from './update-origin.js'

/** The writer of the REST API's and restores' updates: its client ids are bound to `API_SUBJECT`. */
const API_WRITER: Writer = {
  identity: { userId: API_SUBJECT, name: null },
  canWrite: true,
  origin: { kind: 'rest' },
}

/** Reached only for a message kind `#dispatch` does not handle, which the compiler refuses. */
function unhandled(message: never): never {
  throw new Error(`unhandled message kind ${(message as Message).kind}`)
}
/** Transaction origin of a stored snapshot merged into the live room. */
const STORED = Symbol('stored')
/** Transaction origin of the app's first content for a new room (`onLoad`). */
const SEEDED = Symbol('seeded')
/** Transaction origin of the room's author bindings (`AuthorBinding`). */
const BINDING = Symbol('binding')

export interface RoomOptions {
  maxDocumentBytes: number
  /**
   * Structs the document may hold, a client counting as `CLIENT_STRUCTS`: what its memory grows
   * with (Yjs keeps each struct as an object of 100–300 bytes), where `maxDocumentBytes` counts
   * the encoding (2–80 bytes each).
   */
  maxDocumentStructs: number
  /** What the room may hold waiting for missing dependencies. */
  waiting: WaitingBudget
  /** Largest presence state (JSON bytes) a client may set. */
  maxPresenceBytes: number
  /** Auth is on: bind each client id to the token subject that first writes under it (`AuthorBinding`). */
  bindAuthors?: boolean
}

/** What a room reports of the frames it handles; called on the hot path. */
export type RoomObserver = Pick<CoreMetrics, 'messageReceived' | 'updateHandled'>

const UNOBSERVED: RoomObserver = { messageReceived() {}, updateHandled() {} }

/** What a room is built from: its document as loaded, its settings, and what it works with. */
export interface RoomInit {
  name: string
  /** The document as loaded (snapshot, then the journal replayed); the room owns it from here on. */
  doc: Y.Doc
  /** Bytes of the loaded state and replayed updates: the first upper bound of the document's size. */
  loadedBytes: number
  /** What their content builds on the heap besides structs and bytes (`contentCostOf`); 0 if unknown. */
  loadedBuiltBytes?: number
  options: RoomOptions
  /** Where the updates the room applies from its clients are journaled. */
  journal: Pick<RoomJournal, 'record' | 'recordBeforeApplying' | 'durable'>
  logger: Logger
  /** Called after every change the room applies (the snapshot writer schedules a save). */
  onChange: () => void
  observer?: RoomObserver
  /** Told of each change (`document.changed`), when someone listens. */
  events?: Pick<EventStream, 'listens' | 'emit'>
  /** The server's memory budget: presence, big updates and the document are charged to it. */
  memory?: MemoryCharges
  /** The budget shed the room (its connections are closed): unload it as soon as it is free. */
  onShed?: () => void
  /** The embedding app's hooks the room runs (`ServerHooks`), and how long each may take. */
  hooks?: RoomHooks
  /** How fast each user's edits may build (server-wide): a writer past it waits. */
  buildPace?: Pick<BuildPace, 'built'>
}

/** The hooks a room runs itself: on the updates and app messages of its writers. */
export interface RoomHooks extends Pick<ServerHooks, 'beforeApply' | 'messages'> {
  /** `HOOK_TIMEOUT_MS`: the longest a hook may take. */
  timeoutMs: number
  /** What the server stamps on the broadcast events it sends itself. */
  serverSender: EventSender
  /** What each user's app messages being handled may hold, on the whole server. */
  appMessageQuota: AppMessageQuota
}

/** Clients a state vector may name beyond those the room knows. */
const STATE_VECTOR_SLACK = 10_000
/**
 * A client's update that builds more than this on the heap (`contentCostOf`'s `builtBytes`: about
 * half a millisecond of work, and garbage to collect) ends its writer's event-loop turn.
 */
const TURN_BUILT_BYTES = 256 * 1024

/**
 * One loaded room, on its owner: its document, its presence, and the connections editing it (this
 * server's clients and those other servers relay). Everything a client sends is applied here and
 * forwarded as the very bytes that arrived to the other connections.
 */
export class Room implements MemberRoom, MemoryHolder {
  readonly name: string
  readonly doc: Y.Doc
  readonly connections = new Set<RoomMember>()
  readonly presence: PresenceTable
  /** Which connection speaks for each presence id: what an id's first write is checked against. */
  readonly #presenceOwners = new PresenceOwners<RoomMember>()
  readonly #checks: ClientUpdateChecks
  /** The app's `beforeApply`, if it has one: asked before each write is applied. */
  readonly #approval: UpdateApproval | null
  /** The app's own message types (`hooks.messages`), if it has any. */
  readonly #appMessages: AppMessages | null
  readonly #buildPace: Pick<BuildPace, 'built'> | null
  /** Grows with every applied change; the snapshot writer compares it with what it saved. */
  version = 0
  /** An upper bound of the encoded document size, so the ceiling rarely needs a full encode. */
  #sizeBound: number
  /**
   * An upper bound of the document's structs and clients (`documentStructs`), so the ceiling rarely
   * needs a count: a change adds at most `STRUCTS_PER_BYTE` per byte of it.
   */
  #structBound: number
  /** The bound when last counted exactly: it is counted again once it drifts too far (`#changed`). */
  #structsCounted = 0
  /** Structs of big updates reserved and not all applied yet: a count does not drop them. */
  #bigStructsInFlight = 0
  /** Bytes of big updates reserved and not all applied yet: an encode does not drop them. */
  #bigBytesInFlight = 0
  /**
   * An upper bound of what the document's content builds on the heap besides its structs and
   * bytes (`contentCostOf`): every applied change adds its own; exact again when a deletion (which
   * may free values) is followed by an encode, which is then read whole.
   */
  #builtBound: number
  /** A deletion was applied since `#builtBound` was last exact. */
  #builtStale = false
  /** What big updates being applied build (`#builtBound` holds it already): a recount keeps it. */
  #bigBuiltInFlight = 0
  /** The last of this room's updates waiting for `beforeApply` (see `#inApprovalTurn`). */
  #approvals: Promise<void> = Promise.resolve()
  /** The document, charged to the server's memory budget by estimate. */
  readonly #documentMemory: DocumentMemory
  #shedding = false
  #destroyed = false
  /**
   * The whole state as last encoded, kept until the document changes: a joiner that holds nothing
   * (most do) gets it without another encode, which costs O(document) on the event loop.
   */
  #encoded: { version: number; state: Uint8Array } | null = null
  /** The framed sync answers of this version, shared by the joiners asking the same. */
  readonly #answers = new SyncAnswers()
  /** The big updates being applied, one after another. */
  #bigUpdates: Promise<void> = Promise.resolve()
  /** Set by the afterTransaction listener: whether the last applied update changed anything. */
  #lastApplyChanged = false
  readonly #options: RoomOptions
  readonly #journal: RoomInit['journal']
  readonly #onChange: () => void
  readonly #onShed: () => void
  readonly #observer: RoomObserver
  readonly #events: RoomInit['events']
  readonly #memory: MemoryCharges

  constructor({
    name,
    doc,
    loadedBytes,
    loadedBuiltBytes,
    options,
    journal,
    logger,
    onChange,
    onShed,
    observer,
    events,
    memory,
    hooks,
    buildPace,
  }: RoomInit) {
    this.#memory = memory ?? UNBOUNDED_MEMORY
    // Uncharged whole at destroy: a frame handled after it charges nothing more.
    this.presence = new PresenceTable((bytes) => {
      if (!this.#destroyed) this.#memory.charge('presence', bytes)
    })
    this.name = name
    this.doc = doc
    this.#sizeBound = loadedBytes
    this.#structBound = documentStructs(doc)
    this.#structsCounted = this.#structBound
    this.#builtBound = loadedBuiltBytes ?? 0
    this.#documentMemory = new DocumentMemory(this.#memory)
    this.#chargeDocument()
    this.#memory.track(this, 'room')
    this.#options = options
    this.#journal = journal
    this.#onChange = onChange
    this.#onShed = onShed ?? (() => {})
    this.#observer = observer ?? UNOBSERVED
    this.#events = events
    this.#buildPace = buildPace ?? null
    this.#checks = new ClientUpdateChecks({
      doc,
      budget: options.waiting,
      enabled: options.bindAuthors ?? false,
      ownerOf: (clientId) => this.#presenceOwners.ownerOf(clientId),
      write: (update) => this.#writeBinding(update),
    })
    this.#approval = hooks?.beforeApply
      ? new UpdateApproval({
          room: name,
          beforeApply: hooks.beforeApply,
          timeoutMs: hooks.timeoutMs,
          state: () => this.encodeState(),
          memory: this.#memory,
          logger,
          refused: (writer, code) =>
            this.#events?.emit({
              type: 'update.refused',
              room: name,
              origin: changeOriginOf(writer),
              code,
              at: Date.now(),
            }),
        })
      : null
    this.#appMessages = hooks?.messages
      ? new AppMessages({
          room: name,
          handlers: hooks.messages,
          timeoutMs: hooks.timeoutMs,
          maxBytes: options.maxPresenceBytes,
          broadcast: (payload, sender) => this.broadcastEvent(payload, sender),
          serverSender: hooks.serverSender,
          quota: hooks.appMessageQuota,
          logger,
        })
      : null
    doc.on('afterTransaction', this.#recordChange)
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
    this.#presenceOwners.release(connection, connection.awarenessClientIds)
    const removed = this.presence.remove(connection.awarenessClientIds)
    if (removed.length === 0) return
    this.#broadcast(encodeAwarenessEntries(removed), null)
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
        const stateVector = this.#checkedStateVector(message.stateVector)
        connection.answerSync(() => (this.#destroyed ? null : this.#syncAnswer(stateVector)))
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
        return this.#applyWrite(connection, message, frame, receivedAt)
      case 'awareness': {
        const entries = decodeAwarenessUpdate(message.update, this.#options.maxPresenceBytes, true)
        // A connection speaks for the ids it introduced, not for the others' presence its
        // provider sends back (y-websocket echoes every presence it hears).
        connection.claimAwarenessClients(this.#presenceOwners.saw(entries, connection))
        this.presence.apply(entries)
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
        this.#sendEvent(
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
        return unhandled(message)
    }
  }

  /**
   * Applies `update` from `origin`, with every check a client's update gets. The REST API and a
   * restore write here, under `API_SUBJECT`, as no connection.
   * Throws, or returns a promise that rejects, as `receive` does.
   */
  applyUpdate(update: Uint8Array, origin: ApiOrigin): Promise<void> | undefined {
    const receivedAt = performance.now()
    const message = { kind: 'update', update } as const
    const frame = encodeUpdate(update)
    this.#observer.messageReceived(message.kind)
    if (isEmptyUpdate(update)) return
    const writer = origin.kind === 'rest' ? API_WRITER : { ...API_WRITER, origin }
    return this.#applyWrite(writer, message, frame, receivedAt)
  }

  /** A writer's update: a big one applied a slice per turn, any other at once. */
  #applyWrite(
    writer: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> | undefined {
    if (message.update.length > SLICE_ABOVE_BYTES)
      return this.#applyBigClientUpdate(writer, message, frame, receivedAt)
    return this.#applyClientUpdate(writer, message, frame, receivedAt)
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
    return this.#diff(this.#checkedStateVector(stateVector))
  }

  /** `stateVector`, checked and bounded; throws `ProtocolError` for a bad one. */
  #checkedStateVector(stateVector: Uint8Array): Uint8Array {
    return isEmptyStateVector(stateVector) ? stateVector : this.#boundedStateVector(stateVector)
  }

  /** What a holder of a checked `stateVector` lacks. */
  #diff(stateVector: Uint8Array): Uint8Array {
    if (isEmptyStateVector(stateVector)) return this.encodeState()
    // Checked and decoded whole by then: whatever the encode throws is the server's fault.
    return Y.encodeStateAsUpdate(this.doc, stateVector)
  }

  /** The sync step 2 answering a checked `stateVector`, shared by every joiner asking the same now. */
  #syncAnswer(stateVector: Uint8Array): Uint8Array {
    return this.#answers.answer(stateVector, () => {
      const diff = this.#diff(stateVector)
      const answer = encodeSyncStep2(diff)
      // The answer ends with the whole state: keep that view of it rather than a second copy.
      if (diff === this.#encoded?.state) this.#encoded.state = answer.subarray(answer.length - diff.length)
      return answer
    })
  }

  /**
   * A client knows at most the clients the room knows, plus those whose updates the room never
   * received: `STATE_VECTOR_SLACK` of them is plenty, and a vector past that is refused.
   */
  #boundedStateVector(stateVector: Uint8Array): Uint8Array {
    return boundedStateVector(stateVector, clientCount(this.doc) + STATE_VECTOR_SLACK, (client) =>
      holdsClient(this.doc, client),
    )
  }

  /** The document's encoded size when last measured, plus every update applied since. */
  get approximateBytes(): number {
    return this.#sizeBound
  }

  /** Takes `state` as the encoding of the document as it is now, made elsewhere (off this thread). */
  adoptEncodedState(state: Uint8Array): void {
    this.#encoded = { version: this.version, state }
    this.#measured(state)
  }

  /** The whole state, including updates still waiting for missing dependencies (so they count). */
  encodeState(): Uint8Array {
    if (this.#encoded?.version === this.version) return this.#encoded.state
    const state = Y.encodeStateAsUpdate(this.doc)
    this.#encoded = { version: this.version, state }
    this.#measured(state)
    return state
  }

  /** `state` is the document's encoding now: its size is exact again, and after deletions what it builds. */
  #measured(state: Uint8Array): void {
    this.#sizeBound = state.length + this.#bigBytesInFlight
    if (this.#builtStale) {
      // O(document), as the encode just was; only after deletions, which may have freed values.
      this.#builtBound = contentCostOf(state).builtBytes + this.#bigBuiltInFlight
      this.#builtStale = false
    }
    this.#chargeDocument()
  }

  /**
   * Merges a snapshot an earlier owner saved late (after this server loaded the room) into the
   * live document: a CRDT union, a slice per event-loop turn when it is big, what was new
   * forwarded to the connections. Resolves with whether anything changed.
   */
  async absorbStored(state: Uint8Array): Promise<boolean> {
    const waitingBefore = waitingOf(this.doc)
    let changed = false
    let built = 0
    const forward = (update: Uint8Array, origin: unknown) => {
      if (origin !== STORED) return
      changed = true
      built += contentCostOf(update).builtBytes
      this.#broadcast(encodeUpdate(update), null)
    }
    this.doc.on('update', forward)
    try {
      await applyInSlices(this.doc, state, { origin: STORED })
    } finally {
      this.doc.off('update', forward)
    }
    // Yjs emits no update for parts that only wait for missing dependencies: they count too, or
    // the next save would drop what the other server saved waiting.
    changed ||= waitingChanged(this.doc, waitingBefore)
    if (changed && !this.#destroyed) {
      this.#changed(state.length, built)
      this.#emitChange(null)
    }
    return changed
  }

  destroy(): void {
    this.#destroyed = true
    this.#memory.charge('presence', -this.presence.bytes)
    this.#documentMemory.release()
    this.#memory.forget(this)
    this.#answers.clear()
    this.doc.destroy()
    this.connections.clear()
  }

  /**
   * The app's first content for a new room (`onLoad`), before any client joins: journaled like an
   * edit, so it is saved, and trusted (the app's own, not a client's: no check).
   */
  seed(update: Uint8Array): void {
    if (this.#apply(update, SEEDED)) this.#journal.record(update)
  }

  /** Every binding of a client id to a token subject, by client id. */
  authors(): Author[] {
    return this.#checks.authors.authors()
  }

  /**
   * A client's update, applied in one go once checked (`ClientUpdateChecks`); an update that is
   * the first write under a client id waits for its binding to be journaled (a promise, so the
   * connection's later frames wait their turn).
   */
  #applyClientUpdate(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> | undefined {
    const checked = this.#checks.check(message.update, connection)
    const { builtBytes } = checked.scanned
    if (this.#approval) {
      const approved = this.#applyApproved(this.#approval, connection, message, frame, receivedAt)
      return this.#afterBuilding(connection, builtBytes, approved)
    }
    if (checked.authorship.kind !== 'apply') {
      const bound = this.#applyOnceBound(connection, message, frame, receivedAt, checked)
      return this.#afterBuilding(connection, builtBytes, bound)
    }
    this.#applyChecked(connection, message, frame, receivedAt, checked.scanned)
    return this.#afterBuilding(connection, builtBytes)
  }

  /**
   * What a writer's next frames wait for once its update (`applying`, if it is not applied yet)
   * built `builtBytes`: the writer's pace (`BuildPace`) when it builds too fast; else, for one that
   * built much (200 KB of `{}` builds 6.5 MB), the next event-loop turn, so the other rooms'
   * messages are read between; else nothing more.
   */
  #afterBuilding(
    connection: Writer,
    builtBytes: number,
    applying?: Promise<void>,
  ): Promise<void> | undefined {
    const waitMs = connection.pacedAs ? (this.#buildPace?.built(connection.pacedAs, builtBytes) ?? 0) : 0
    if (waitMs === 0 && builtBytes <= TURN_BUILT_BYTES) return applying
    const wait = () => (waitMs > 0 ? delay(waitMs, undefined, { ref: false }) : nextTurn()).then(() => {})
    return applying ? applying.then(wait) : wait()
  }

  /**
   * An update that passed the server's checks, once the app's `beforeApply` accepts it: checked
   * again then, as other writers may have changed the room while the hook ran. Nothing of it is
   * journaled, applied or bound before.
   */
  #applyApproved(
    approval: UpdateApproval,
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> {
    return this.#inApprovalTurn(async () => {
      await approval.approve(connection, message.update)
      if (this.#destroyed) return
      const checked = this.#checks.check(message.update, connection)
      if (checked.authorship.kind !== 'apply') {
        return this.#applyOnceBound(connection, message, frame, receivedAt, checked)
      }
      this.#applyChecked(connection, message, frame, receivedAt, checked.scanned)
    })
  }

  /**
   * Runs `step` once every update before it is decided by `beforeApply` and, if accepted, applied:
   * one at a time per room, so each check sees the room as the update before left it (two async
   * checks side by side could each pass while both together break the app's rule).
   */
  #inApprovalTurn<T>(step: () => Promise<T>): Promise<T> {
    const turn = this.#approvals.then(step)
    this.#approvals = turn.then(
      () => {},
      () => {},
    )
    return turn
  }

  /**
   * Resolves once no update waits for `beforeApply` (those accepted are applied by then): the room
   * unloads only after, so an update accepted after its author left is still journaled and saved.
   */
  async approvalsSettled(): Promise<void> {
    for (let tail = this.#approvals; ; tail = this.#approvals) {
      await tail
      if (tail === this.#approvals) return
    }
  }

  async #applyOnceBound(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
    first: CheckedUpdate,
  ): Promise<void> {
    let checked = first
    while (checked.authorship.kind !== 'apply') {
      const { authorship } = checked
      // Refused before anything is bound, the binding counted with the update.
      const binding =
        authorship.kind === 'bind'
          ? this.#checks.authors.sizeOfBinding(authorship.clients, connection)
          : NO_BINDING
      this.#ensureSpaceFor(message.update, checked.scanned, binding)
      await (authorship.kind === 'bind'
        ? this.#checks.authors.bind(authorship.clients, connection)
        : authorship.until)
      if (this.#destroyed) return
      checked = this.#checks.check(message.update, connection) // the room changed meanwhile
    }
    this.#applyChecked(connection, message, frame, receivedAt, checked.scanned)
  }

  /**
   * Refuses an update the document has no room for, with the binding it makes first if any: bytes,
   * structs, or the server's memory.
   */
  #ensureSpaceFor(update: Uint8Array, scanned: ScannedUpdate, binding = NO_BINDING): void {
    this.#ensureRoomFor(update.length + binding.bytes)
    const structs = structsAdded(scanned, (client) => clockOf(this.doc, client)) + binding.structs
    this.#ensureStructsFor(structs)
    this.#ensureMemoryFor(
      { structs, bytes: update.length + binding.bytes, builtBytes: scanned.builtBytes },
      false,
    )
  }

  #applyChecked(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
    scanned: ScannedUpdate,
  ): void {
    this.#ensureSpaceFor(message.update, scanned)
    // An update that changes nothing (a client resending what the room has) goes nowhere.
    if (!this.#apply(message.update, connection, scanned.builtBytes)) return
    // Journaled before it is forwarded: whatever anyone saw survives a crash of this server.
    this.#journal.record(message.update)
    this.#forward(connection, message, frame, receivedAt)
  }

  /** Sends a client's applied update to the room's other connections. */
  #forward(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): void {
    // A sync step 2 is forwarded as an update: same payload, only the sub-type differs.
    const forwarded = message.kind === 'update' ? frame : encodeUpdate(message.update)
    this.#broadcast(forwarded, connection)
    this.#observer.updateHandled(receivedAt)
    this.#emitChange(connection)
  }

  /**
   * A big update (an offline copy synced whole, a long paste): checked and cut into slices by the
   * worker thread, then applied a slice per event-loop turn, so every other room is served in
   * between. The connection holds its later frames until this settles, keeping its order. Big
   * updates take turns per room, and each reserves its size against the ceiling before it waits,
   * so concurrent ones are checked against each other. It is journaled before its first slice, as
   * anyone may see that slice from then on. Its memory is reserved from the server's budget on
   * arrival, and it is refused (`ServerBusyError`) when the budget cannot take it.
   */
  #applyBigClientUpdate(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> {
    const reserved = BIG_UPDATE_RESERVE_FACTOR * message.update.length
    if (!this.#memory.reserve('big-update', reserved)) {
      throw new ServerBusyError('the server has no memory to spare for an update this big now; retry later')
    }
    const turn = this.#bigUpdates
      .then(() => this.#applyBig(connection, message, frame, receivedAt))
      .finally(() => this.#memory.charge('big-update', -reserved))
    this.#bigUpdates = turn.catch(() => {})
    return turn
  }

  async #applyBig(
    connection: Writer,
    message: Message & { update: Uint8Array },
    frame: Uint8Array,
    receivedAt: number,
  ): Promise<void> {
    const { update } = message
    if (this.#destroyed) return
    this.#ensureRoomFor(update.length)
    // Refused here, before the worker reads it, when the document has no room for any more structs.
    const maxStructs = this.#options.maxDocumentStructs - this.#countStructs()
    this.#ensureStructsFor(1)
    // Reserved against the ceiling (and charged) while it waits and applies; returned after, as
    // each slice counts its own bytes when applied.
    this.#bigBytesInFlight += update.length
    this.#sizeBound += update.length
    try {
      const cut = await checkAndSlice(update, Y.encodeStateVector(this.doc), maxStructs)
      if (this.#destroyed) return
      // Checked whole on the worker by now: the app may build the document it would make.
      const approval = this.#approval
      if (approval) await this.#inApprovalTurn(() => approval.approve(connection, update))
      if (this.#destroyed) return
      // From here until it is applied, no other client writes where it does.
      const release = this.#checks.reserve(cut.ranges)
      let changed = false
      try {
        const roomForBinding = (binding: BindingSize) => {
          this.#ensureRoomFor(binding.bytes)
          this.#ensureStructsFor(cut.structs + binding.structs)
        }
        if (!(await this.#checks.checkSliced(cut, connection, () => this.#destroyed, roomForBinding))) return
        this.#ensureStructsFor(cut.structs) // against what other updates added meanwhile
        this.#ensureMemoryFor(
          { structs: cut.structs, bytes: update.length, builtBytes: cut.builtBytes },
          true,
        )
        // Reserved too, as its slices are applied over several turns.
        this.#bigStructsInFlight += cut.structs
        this.#structBound += cut.structs
        this.#bigBuiltInFlight += cut.builtBytes
        this.#builtBound += cut.builtBytes
        const journaled = this.#journal.recordBeforeApplying(update)
        try {
          // Applied to the end even if the client leaves meanwhile: it passed the checks and is
          // journaled, and what is applied must also be forwarded.
          for (const [index, slice] of cut.slices.entries()) {
            if (index > 0) await nextTurn()
            if (this.#destroyed) return
            changed = this.#apply(slice, connection, 0) || changed // its building is reserved
          }
        } finally {
          journaled.applied()
          this.#bigStructsInFlight -= cut.structs
          this.#bigBuiltInFlight -= cut.builtBytes
        }
      } finally {
        release()
      }
      if (changed) this.#forward(connection, message, frame, receivedAt)
    } finally {
      this.#bigBytesInFlight -= update.length
      this.#sizeBound -= update.length
      this.#countStructs() // what was reserved for it (counted again by its slices): settled
    }
  }

  /**
   * Writes a binding (`AuthorBinding`): journaled first and applied once the journal confirms it,
   * then sent to the clients. If the journal fails, it is applied (a snapshot can then
   * hold it) and sent once the snapshot is saved.
   */
  async #writeBinding(update: Uint8Array): Promise<void> {
    const journaled = this.#journal.recordBeforeApplying(update)
    const appended = await journaled.appended
    try {
      if (this.#destroyed) return
      this.#apply(update, BINDING)
    } finally {
      journaled.applied()
    }
    if (!appended) await this.durable()
    if (this.#destroyed) return
    this.#broadcast(encodeUpdate(update), null)
  }

  /**
   * Applies an update; true if it changed the document, or what it holds waiting for missing
   * dependencies (waiting parts are forwarded, journaled and saved like the rest). `built`: what
   * its content builds (`contentCostOf`), if already known.
   */
  #apply(update: Uint8Array, origin: unknown, built?: number): boolean {
    const waitingBefore = waitingOf(this.doc)
    this.#lastApplyChanged = false
    let changed = false
    try {
      applySentUpdate(this.doc, update, origin)
    } finally {
      // Also when an observer failed after Yjs applied the bytes: the document did change, and
      // must be saved and encoded anew, never held in memory alone.
      changed = this.#lastApplyChanged || waitingChanged(this.doc, waitingBefore)
      if (changed) this.#changed(update.length, built ?? contentCostOf(update).builtBytes)
    }
    return changed
  }

  #changed(bytes: number, built: number): void {
    this.#sizeBound += bytes
    this.#builtBound += built
    this.#structBound += bytes * STRUCTS_PER_BYTE
    // The bound grows by the bytes, the memory charged with it: counted again (O(clients), and a
    // document of C clients counts 8C) once it drifts an eighth, or 64, past the last count, so a
    // count costs O(1) per struct added, and a room is overcharged 16 KB at most past an eighth.
    if (this.#structBound - this.#structsCounted > Math.max(64, this.#structsCounted / 8))
      this.#countStructs()
    else this.#chargeDocument()
    this.version++
    this.#encoded = null
    this.#answers.clear()
    this.#onChange()
  }

  readonly #recordChange = (transaction: Y.Transaction): void => {
    if (transaction.deleteSet.clients.size > 0) this.#builtStale = true
    if (this.#lastApplyChanged || transaction.deleteSet.clients.size > 0) {
      this.#lastApplyChanged = true
      return
    }
    // Read in place: a copy of the state vector per transaction is garbage of O(clients).
    for (const [client, clock] of transaction.afterState) {
      if (transaction.beforeState.get(client) !== clock) {
        this.#lastApplyChanged = true
        return
      }
    }
  }

  /** Refuses an update that could push the document past the ceiling, measured exactly if close. */
  #ensureRoomFor(updateBytes: number): void {
    const max = this.#options.maxDocumentBytes
    if (this.#sizeBound + updateBytes <= max) return
    // Measured exactly: a big update still being applied counts whole, as in the bound.
    if (this.encodeState().length + this.#bigBytesInFlight + updateBytes <= max) return
    throw new DocumentTooLargeError(`document would exceed ${max} bytes`)
  }

  /** Refuses an update that could give the document more than its ceiling of structs, counted exactly if close. */
  #ensureStructsFor(structs: number): void {
    const max = this.#options.maxDocumentStructs
    if (this.#structBound + structs <= max) return
    if (this.#countStructs() + structs <= max) return
    throw new DocumentTooLargeError(`document would exceed ${max} structs`)
  }

  /** The document's structs and clients, counted (O(clients)); the bound is exact again after. */
  #countStructs(): number {
    this.#structBound = documentStructs(this.doc) + this.#bigStructsInFlight
    this.#structsCounted = this.#structBound
    this.#chargeDocument()
    return this.#structBound
  }

  /**
   * Refuses (`ServerBusyError`) an edit adding `structs` the loaded documents have no memory for
   * (`DocumentMemory.reserveGrowth`); the budget meanwhile unloads the largest rooms.
   */
  #ensureMemoryFor(growth: { structs: number; bytes: number; builtBytes: number }, big: boolean): void {
    if (this.#documentMemory.reserveGrowth(growth, big)) return
    throw new ServerBusyError("the server's memory for documents is full: the edit is refused; retry later")
  }

  #chargeDocument(): void {
    this.#documentMemory.update(this.#structBound, this.#sizeBound, this.#builtBound)
  }

  /** What the room's document is charged. */
  get heldBytes(): number {
    return this.#documentMemory.bytes
  }

  /** How much its document's charge grew since it loaded: the budget unloads the rooms that grew the most first. */
  get grownBytes(): number {
    return this.#documentMemory.grownBytes
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
   * Sends a broadcast event (JSON text) from `sender` to the room's clients that hear events;
   * `MessageTooBigError` or `ProtocolError` for a payload refused.
   */
  broadcastEvent(payload: Uint8Array, sender: EventSender): void {
    this.#sendEvent(payload, sender, null)
  }

  /**
   * Ephemeral, never stored: stamped with its sender, to the connections that announced they
   * understand events.
   */
  #sendEvent(payload: Uint8Array, sender: EventSender, except: RoomMember | null): void {
    checkBroadcast(payload, this.#options.maxPresenceBytes)
    const frame = encodeRelayedEvent(payload, sender)
    for (const connection of this.connections) {
      if (connection !== except && connection.capabilities.has('events')) connection.send(frame)
    }
  }
}

/** What a document holds waiting for missing dependencies, to tell later whether that changed. */
interface Waiting {
  structs: Uint8Array | undefined
  deletions: Uint8Array | null
}

function waitingOf(doc: Y.Doc): Waiting {
  return { structs: waitingStructs(doc)?.update, deletions: waitingDeletions(doc) }
}

/**
 * Whether what waits changed since `before`. Yjs replaces its waiting structs' update when it
 * merges more in, but re-encodes its waiting deletions on every update, changed or not: those
 * are compared by their bytes.
 */
function waitingChanged(doc: Y.Doc, before: Waiting): boolean {
  const { structs, deletions } = waitingOf(doc)
  if (structs !== before.structs) return true
  if (deletions === before.deletions) return false
  return !deletions || !before.deletions || Buffer.compare(deletions, before.deletions) !== 0
}
