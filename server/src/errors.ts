import type { ServerErrorCode, ServerErrorStatus } from '@symphony/client/wire'

/**
 * Every `code` a `SymphonyError` carries. A new one must be answered in `error-answers.ts`
 * (its close code and HTTP answer): the compiler names a code left out there.
 */
export type SymphonyErrorCode =
  | AuthErrorCode
  | 'PROTOCOL_ERROR'
  | 'CONFIG_ERROR'
  | 'DOCUMENT_TOO_LARGE'
  | 'MESSAGE_TOO_BIG'
  | 'PENDING_LIMIT'
  | 'SERVER_BUSY'
  | 'SNAPSHOT_CONFLICT'
  | 'VERSION_NOT_FOUND'
  | 'SNAPSHOTS_UNAVAILABLE'
  | 'VERSION_NOT_RESTORABLE'
  | 'ROOM_DELETED'
  | 'RESTORE_MISMATCH'
  | 'HEARTBEAT_MISSED'
  | 'UPDATE_REFUSED'
  | 'CONNECTION_REFUSED'
  | 'STALE_EPOCH'
  | 'ROOM_MOVED'

/** Base of every error Symphony raises on purpose; `code` is stable and safe to match on. */
export class SymphonyError extends Error {
  constructor(
    readonly code: SymphonyErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A `SymphonyError` class whose errors always carry one `code`. */
interface ErrorWithCode<C extends SymphonyErrorCode> {
  new (message: string, options?: ErrorOptions): SymphonyError & { readonly code: C }
}

/**
 * The base of an error class that always carries `code`: `class XError extends errorWithCode('X') {}`
 * keeps the class's own name and `instanceof`, and types `code` as that one code.
 */
function errorWithCode<C extends SymphonyErrorCode>(code: C): ErrorWithCode<C> {
  return class extends SymphonyError {
    declare readonly code: C
    constructor(message: string, options?: ErrorOptions) {
      super(code, message, options)
    }
  }
}

/** A frame that does not follow the y-websocket protocol. */
export class ProtocolError extends errorWithCode('PROTOCOL_ERROR') {}

/** Start-up configuration that cannot be used. */
export class ConfigError extends errorWithCode('CONFIG_ERROR') {}

type AuthErrorCode = Extract<
  ServerErrorCode,
  | 'TOKEN_MISSING'
  | 'TOKEN_INVALID'
  | 'TOKEN_AMBIGUOUS'
  | 'PROTOCOL_INVALID'
  | 'ROOM_FORBIDDEN'
  | 'AUTH_UNAVAILABLE'
>

/**
 * A token that is missing, invalid, or does not grant the room (401, 403), that was sent in a
 * way the server refuses to read (400: in two places, or in a malformed header), or that cannot
 * be checked right now because the identity provider's keys are unreachable (503: retry later,
 * after `retryAfterSeconds`). `status` is the HTTP answer.
 */
export class AuthError<C extends AuthErrorCode = AuthErrorCode> extends SymphonyError {
  declare readonly code: C
  constructor(
    code: C,
    readonly status: ServerErrorStatus<C>,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(code, message)
  }
}

/** An update that would grow a document past the configured ceiling. */
export class DocumentTooLargeError extends errorWithCode('DOCUMENT_TOO_LARGE') {}

/** A message, or a part of one, past a configured size limit. */
export class MessageTooBigError extends errorWithCode('MESSAGE_TOO_BIG') {}

/** An update that would leave the room holding more than it may wait for missing updates. */
export class PendingLimitError extends errorWithCode('PENDING_LIMIT') {}

/** An update the embedding app refused (its `beforeApply` hook): nothing of it is applied or stored. */
export class UpdateRefusedError extends SymphonyError {
  constructor(message: string) {
    super('UPDATE_REFUSED', message)
  }
}

/** The server cannot take this message right now (its worker is busy or gone): retry later. */
export class ServerBusyError extends errorWithCode('SERVER_BUSY') {}

/** A conditional snapshot save found another version stored than the one it expected. */
export class SnapshotConflictError extends errorWithCode('SNAPSHOT_CONFLICT') {}

/**
 * A durable write (a journal append or trim, a snapshot save) by a room's owner at an epoch a
 * later owner has passed: this server no longer owns the room and must stop serving it.
 */
export class StaleEpochError extends errorWithCode('STALE_EPOCH') {}

/** The room is owned by another server now: its clients reconnect and are relayed there. */
export class RoomMovedError extends errorWithCode('ROOM_MOVED') {}

/** A snapshot version id (or a versions cursor) that the store does not hold for the room. */
export class SnapshotVersionNotFoundError extends errorWithCode('VERSION_NOT_FOUND') {}

/** The snapshot store failed a versions request (listing or reading a version). */
export class SnapshotsUnavailableError extends errorWithCode('SNAPSHOTS_UNAVAILABLE') {}

/** A store's answer to a versions request: its own refusals as they are, any other failure a `SnapshotsUnavailableError`. */
export function fromSnapshotStore<T>(request: Promise<T>): Promise<T> {
  return request.catch((error: unknown) => {
    if (error instanceof SymphonyError || error instanceof RangeError) throw error
    throw new SnapshotsUnavailableError('the snapshot store did not answer; try again', { cause: error })
  })
}

/** A saved version that cannot be restored into the live room: a deletion, or an earlier incarnation's. */
export class VersionNotRestorableError extends errorWithCode('VERSION_NOT_RESTORABLE') {}

/** The room's snapshot store holds a later incarnation or its tombstone: this one was deleted. */
export class RoomDeletedError extends errorWithCode('ROOM_DELETED') {}

/**
 * An app's `onConnect` hook refuses the connection: the upgrade is answered 403
 * `CONNECTION_REFUSED` with this message (the client sees it as `AUTH_REFUSED`, and stops).
 */
export class ConnectionRefusedError extends errorWithCode('CONNECTION_REFUSED') {}

/** Whether a write failed because the disk (or quota) is full: it heals when space returns. */
export function isOutOfSpace(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'ENOSPC' || code === 'EDQUOT'
}
