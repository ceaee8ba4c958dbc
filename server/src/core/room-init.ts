import type { EventSender } from '@symphony/client/wire'
import type * as Y from 'yjs'
import type { Logger } from '../logger.js'
import type { WaitingBudget } from '../protocol/update-guard.js'
import type { ServerHooks } from '../server-hooks.js'
import type { AppMessageQuota } from './app-message-quota.js'
import type { CoreMetrics } from './core-metrics.js'
import type { EventStream } from './event-stream.js'
import type { MemoryCharges } from './memory-budget.js'
import type { BuildPace } from './pacing.js'
import type { RoomJournal } from './room-journal.js'
import type { RoomMailbox } from './room-mailbox.js'

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
  /** The room instance's one queue (its life's, `RoomLife.mailbox`); a room of its own if none. */
  mailbox?: RoomMailbox
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
