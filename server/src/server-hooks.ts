import type * as Y from 'yjs'
import type { ChangeOrigin, ConnectionInfo } from './core/server-events.js'

/** What `onChange` is given: the room, its document, and who made the latest change. */
export interface ChangeInfo {
  room: string
  /**
   * The room's live document on this server. Read it (`toJSON`, `encodeStateAsUpdate`…), never
   * change it: a change made here would reach no journal, no peer and no client. To write, use
   * the REST API.
   */
  document: Y.Doc
  /** Who made the latest change of those this call reports (`client`, `rest` or `restore`; never `peer`). */
  origin: ChangeOrigin
  /** How many changes this call reports (they came within the debounce). */
  changes: number
}

/** `onChange`'s debounce when unset: like Hocuspocus's `onStoreDocument`. */
export const DEFAULT_ON_CHANGE_DEBOUNCE_MS = 2_000
export const DEFAULT_ON_CHANGE_MAX_WAIT_MS = 10_000

/**
 * What an app embedding the server (`createSyncServer({ hooks })`) plugs into a room's life: each
 * hook is optional, and a server without hooks behaves exactly as one started by `npm start`.
 * The room's events (joined, left, changed, saved…) are one typed stream as well: `server.events`.
 * Guide: docs/embedding.md ("Hooks", and "Events and hooks" for the event stream's).
 */
export interface ServerHooks {
  // Connections and changes (the event stream's hooks: observers/hooks-observer.ts).
  /**
   * A client passed the token check and asks to join `room`; runs on the server it connects to,
   * before the WebSocket upgrade (the client waits for it). Throw `ConnectionRefusedError` to
   * refuse: HTTP 403 `CONNECTION_REFUSED` with your message; any other throw refuses with 500
   * `INTERNAL_ERROR` and is logged; no answer within `hookTimeoutMs` refuses with 503 `SERVER_BUSY`.
   * A connection it lets in may still fail to join (the upgrade fails, the client goes away, the room
   * or server is full): count joins with `onDisconnect`'s pair, the `connection.joined` event.
   */
  onConnect?: (connection: ConnectionInfo) => void | Promise<void>
  /**
   * A connection that joined its room (`connection.joined`) has ended; runs on its server. A throw
   * (or a call past `hookTimeoutMs`) is logged.
   */
  onDisconnect?: (connection: ConnectionInfo) => void | Promise<void>
  /**
   * The room's document changed, debounced per room: called `onChangeDebounceMs` after the last
   * change, and at least every `onChangeMaxWaitMs` while changes keep coming, and once more for
   * what is pending when the room unloads. Runs on the server where the changes were made (a
   * client's server, or the one the REST API wrote through), never for a peer's copy, so each
   * change is reported once in a cluster. Calls for one room never overlap, but one still running
   * after `hookTimeoutMs` is logged and no longer holds the next. A throw is logged.
   */
  onChange?: (change: ChangeInfo) => void | Promise<void>
  /** Quiet time after a room's last change before `onChange` runs. Default 2 000 ms. */
  onChangeDebounceMs?: number
  /** The longest `onChange` waits while changes keep coming. Default 10 000 ms. */
  onChangeMaxWaitMs?: number
  // End of onConnect, onDisconnect and onChange.
  // Updates, loading, storing and the app's own messages (docs/embedding.md "Hooks").
  /**
   * Runs on the server the author is connected to (or that took the REST write), after the
   * server's own checks and before the update is journaled, applied or seen by anyone; a peer's
   * update was checked on its author's server and is not checked again. Return (or resolve) to
   * accept; call `refuse(reason)` to refuse: the author's connection is closed with 4422
   * `UpdateRefused` and the reason, a REST write answers 422 `UPDATE_REFUSED`. Any other throw
   * refuses too, and is logged; a hook that does not settle within `hookTimeoutMs` refuses as
   * busy (1013 / 503 `SERVER_BUSY`). A room's updates are decided one at a time, each against the
   * room with the one before applied: a client's updates apply in the order sent, and the room's
   * other writers wait for the verdict (other rooms go on).
   */
  beforeApply?: (update: UpdateToApply) => void | Promise<void>
  /**
   * Runs when a room loads on a server and nothing is stored for it anywhere (no peer holds it, no
   * snapshot, no journal): a new room, or one deleted since. What it returns (a Yjs update) is the
   * room's first content, journaled like an edit. Two servers may load a new room at once and
   * both seed it: return the same bytes each time (build them with a fixed `clientID`) and the
   * two merge as one. A throw (or no answer within `hookTimeoutMs`) fails the load, which is
   * retried while clients wait.
   */
  onLoad?: (room: RoomToLoad) => Uint8Array | null | undefined | Promise<Uint8Array | null | undefined>
  /**
   * Runs after each snapshot the server saves of a room (within `SNAPSHOT_INTERVAL_MS` of a change,
   * and when the room unloads), on the server that saved it, one call at a time per room. The save
   * is done and acknowledged before it runs; a throw (or no answer within `hookTimeoutMs`) is
   * logged, and the room is saved and `onStore` called again at the next interval (in a cluster,
   * with the snapshot another server saved, when that one holds everything this server has).
   */
  onStore?: (stored: StoredRoom) => void | Promise<void>
  /**
   * The app's own message types, by name: a client sends `room.send(type, data)` and gets the
   * handler's return value back. Runs on the server the sender is connected to.
   */
  messages?: Readonly<Record<string, AppMessageHandler>>
  // End of beforeApply, onLoad, onStore and messages.
}

export const NO_HOOKS: ServerHooks = {}

/** Who wrote an update, or sent a message: the token's subject and name (`symphony:api` for the REST API). */
export interface HookUser {
  readonly userId: string
  readonly name: string | null
}

/** An update `beforeApply` may accept or refuse. */
export interface UpdateToApply {
  readonly room: string
  /** The Yjs update, as the author sent it. */
  readonly update: Uint8Array
  /** `client`: a WebSocket connection's; `rest`: `POST …/update` or `server.room(name).applyUpdate`; `restore`: a version restored. */
  readonly origin: 'client' | 'rest' | 'restore'
  readonly user: HookUser
  /** The author's connection (`client` only), as webhooks and broadcast events name it. */
  readonly connectionId: string | null
  /** The saved version being restored (`restore` only), as `GET …/versions` lists it. */
  readonly version: string | null
  /**
   * The room's document as it would be with the update applied: a scratch copy, built on the
   * first call (O(document), charged to the server's memory budget) and dropped after the hook.
   * Its root `symphony:authors` is the server's own; changing the copy changes nothing.
   */
  documentAfter(): Y.Doc
}

/** A room loading with nothing stored for it. */
export interface RoomToLoad {
  readonly room: string
}

/** A snapshot the server saved. */
export interface StoredRoom {
  readonly room: string
  /** The room's whole state as saved, a Yjs update. */
  readonly state: Uint8Array
  /** The saved state as a Y.Doc, built on the first call. */
  document(): Y.Doc
}

/** A client's message of an app-defined type. */
export interface AppMessage {
  readonly room: string
  readonly type: string
  /** The JSON value the client sent. */
  readonly data: unknown
  readonly user: HookUser
  readonly connectionId: string
  /** Whether the sender's token grants writing (`rw`): a read-only user's message is the app's to judge. */
  readonly canWrite: boolean
  /**
   * Sends `data` as a broadcast event to every client of the room that hears them, on every
   * server, the sender included; stamped as the server's (`from.userId` is `symphony:api`), so
   * clients can tell it from a client's own broadcast.
   */
  broadcast(data: unknown): void
}

/**
 * Handles one app message: what it returns (or resolves with, JSON) is the sender's reply;
 * `refuse(reason)` answers the sender with the refusal, and any other throw refuses with a
 * generic reason and is logged.
 */
export type AppMessageHandler = (message: AppMessage) => unknown

/** Thrown by `refuse`: a hook's deliberate refusal, with the reason the client is told. */
export class HookRefusal extends Error {
  readonly code = 'REFUSED'
}

/** Refuses the update or message a hook is handling; `reason` (at most about 100 characters) is what the client is told. */
export function refuse(reason: string): never {
  throw new HookRefusal(reason)
}
