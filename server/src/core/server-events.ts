import type * as Y from 'yjs'

/**
 * Who made a change, as `document.changed` reports it: a client's connection (this server's own or
 * one relayed to it), the REST API (or an embedder's write), a restore of saved version `version`,
 * or another server (an earlier owner's late snapshot merged in: that server reported its changes).
 */
export type ChangeOrigin =
  | {
      readonly kind: 'client'
      readonly connectionId: string
      readonly userId: string
      readonly name: string | null
    }
  | { readonly kind: 'rest' }
  | { readonly kind: 'restore'; readonly version: string }
  | { readonly kind: 'peer' }

/** A connection: its room and id, and who it is (the token's subject, `name` and `info` claims). */
export interface ConnectionInfo {
  readonly room: string
  /** Unique across servers and restarts (`<serverId>:<boot>:<n>`). */
  readonly connectionId: string
  /** The token's subject (`anonymous` with `AUTH=none`). */
  readonly userId: string
  readonly name: string | null
  readonly info: Record<string, unknown> | null
  /** `ro`: its updates are never applied. */
  readonly access: 'rw' | 'ro'
}

/**
 * What happens on one server, as one typed stream (`server.events`). Each event is emitted by the
 * server where it happened, once: a change by the server its author is connected to (a peer's
 * copy reports it with origin `peer`), a join or leave by the connection's server, a deletion by
 * the server that was asked. `at`: when, in ms since the epoch.
 */
export type ServerEvent =
  /** The room loaded here; `bytes`: the state it loaded (its journal replayed on top). */
  | {
      readonly type: 'room.loaded'
      readonly room: string
      readonly source: 'snapshot' | 'empty'
      readonly bytes: number
      readonly at: number
    }
  /**
   * The room unloaded here (saved, deregistered, unsubscribed), just before its document is freed.
   * `changedAt`: the last change a client or the REST API made to it here, if any.
   */
  | {
      readonly type: 'room.unloaded'
      readonly room: string
      readonly bytes: number
      readonly changedAt: number | undefined
      readonly at: number
    }
  /** The room was deleted through this server (its stores cleared). */
  | { readonly type: 'room.deleted'; readonly room: string; readonly at: number }
  /** A client was admitted to the room here (it may still wait for the room to load). */
  | ({ readonly type: 'connection.joined'; readonly at: number } & ConnectionInfo)
  /** That client's connection ended, for whatever reason. */
  | ({ readonly type: 'connection.left'; readonly at: number } & ConnectionInfo)
  /**
   * A connection was refused before it joined: `code` is the error code (`ROOM_FULL`,
   * `TOKEN_INVALID`, `CONNECTION_REFUSED`…); `room` is null when the path named no valid room.
   */
  | {
      readonly type: 'connection.refused'
      readonly room: string | null
      readonly code: string
      readonly at: number
    }
  /**
   * The room's document changed. `document` is the live room: read it, never write to it (write
   * through the REST API). Emitted on the hot path: only when someone listens for it.
   */
  | {
      readonly type: 'document.changed'
      readonly room: string
      readonly origin: ChangeOrigin
      readonly document: Y.Doc
      readonly at: number
    }
  /**
   * An update was refused, nothing of it applied: `code` says why (`READ_ONLY`: the connection
   * may only read; `UPDATE_REFUSED`: the app's `beforeApply` refused it, or threw; `SERVER_BUSY`:
   * it did not answer in time, or its scratch copy did not fit the memory budget).
   */
  | {
      readonly type: 'update.refused'
      readonly room: string
      readonly origin: ChangeOrigin
      readonly code: string
      readonly at: number
    }
  /** The room was restored to saved version `version` (the REST API's or the dashboard's restore). */
  | {
      readonly type: 'document.restored'
      readonly room: string
      readonly version: string
      readonly at: number
    }
  /** A snapshot of the room was saved; `seconds`: how long encoding and saving took. */
  | { readonly type: 'snapshot.saved'; readonly room: string; readonly seconds: number; readonly at: number }
  /** A snapshot write failed (it is retried); `outOfSpace`: the disk is full. */
  | {
      readonly type: 'snapshot.failed'
      readonly room: string
      readonly error: unknown
      readonly outOfSpace: boolean
      readonly at: number
    }
  /** A journal append or trim failed (an append is then held by the next snapshot instead). */
  | {
      readonly type: 'journal.failed'
      readonly room: string
      readonly action: 'append' | 'trim'
      readonly error: unknown
      readonly outOfSpace: boolean
      readonly at: number
    }

export type ServerEventType = ServerEvent['type']

/** The event of type `T`. */
export type ServerEventOf<T extends ServerEventType> = Extract<ServerEvent, { type: T }>

/** Listens for events of one type; a listener that throws is logged and the others still run. */
export type ServerEventListener<T extends ServerEventType> = (event: ServerEventOf<T>) => void

/** What an app sees of the stream: `on` returns the function that unsubscribes. */
export interface ServerEvents {
  on<T extends ServerEventType>(type: T, listener: ServerEventListener<T>): () => void
}
