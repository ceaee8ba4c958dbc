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
 * Guide: docs/embedding.md ("Events and hooks").
 */
export interface ServerHooks {
  // Connections and changes (the event stream's hooks: observers/hooks-observer.ts).
  /**
   * A client passed the token check and asks to join `room`; runs on the server it connects to,
   * before the WebSocket upgrade (the client waits for it). Throw `ConnectionRefusedError` to
   * refuse: HTTP 403 `CONNECTION_REFUSED` with your message; any other throw refuses with 500
   * `INTERNAL_ERROR` and is logged.
   */
  onConnect?: (connection: ConnectionInfo) => void | Promise<void>
  /** A connection `onConnect` let in has ended; runs on its server. A throw is logged. */
  onDisconnect?: (connection: ConnectionInfo) => void | Promise<void>
  /**
   * The room's document changed, debounced per room: called `onChangeDebounceMs` after the last
   * change, and at least every `onChangeMaxWaitMs` while changes keep coming, and once more for
   * what is pending when the room unloads. Runs on the server where the changes were made (a
   * client's server, or the one the REST API wrote through), never for a peer's copy, so each
   * change is reported once in a cluster. Calls for one room never overlap. A throw is logged.
   */
  onChange?: (change: ChangeInfo) => void | Promise<void>
  /** Quiet time after a room's last change before `onChange` runs. Default 2 000 ms. */
  onChangeDebounceMs?: number
  /** The longest `onChange` waits while changes keep coming. Default 10 000 ms. */
  onChangeMaxWaitMs?: number
}

export const NO_HOOKS: ServerHooks = {}
