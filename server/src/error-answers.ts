import {
  CloseCode,
  type CloseCodeValue,
  SERVER_ERROR_CODES,
  type ServerErrorCode,
  type ServerErrorStatus,
} from '@symphony/client/wire'
import { AuthError, SymphonyError, type SymphonyErrorCode } from './errors.js'

/** How an error is answered: the close code on a WebSocket, the error code (and so the status) over HTTP. */
interface ErrorAnswer {
  readonly close: CloseCodeValue
  readonly http: ServerErrorCode
}

/** The server's own failure: logged, and answered without its message. */
const INTERNAL = { close: CloseCode.InternalError, http: 'INTERNAL_ERROR' } as const

/**
 * The one table from an error's code to its answers, so a WebSocket close and an HTTP reply
 * never disagree; `satisfies` makes the compiler name a code left out.
 */
const ANSWERS = {
  PROTOCOL_ERROR: { close: CloseCode.ProtocolError, http: 'UPDATE_INVALID' },
  DOCUMENT_TOO_LARGE: { close: CloseCode.DocumentTooLarge, http: 'DOCUMENT_TOO_LARGE' },
  MESSAGE_TOO_BIG: { close: CloseCode.MessageTooBig, http: 'UPDATE_TOO_LARGE' },
  PENDING_LIMIT: { close: CloseCode.TooMuchPending, http: 'UPDATE_WAITS_TOO_MUCH' },
  SERVER_BUSY: { close: CloseCode.TryAgainLater, http: 'SERVER_BUSY' },
  UPDATE_REFUSED: { close: CloseCode.UpdateRefused, http: 'UPDATE_REFUSED' },
  VERSION_NOT_FOUND: { close: CloseCode.InternalError, http: 'VERSION_NOT_FOUND' },
  VERSION_NOT_RESTORABLE: { close: CloseCode.InternalError, http: 'VERSION_NOT_RESTORABLE' },
  SNAPSHOTS_UNAVAILABLE: { close: CloseCode.InternalError, http: 'SNAPSHOTS_UNAVAILABLE' },
  // Token errors refuse an upgrade or an access check before any socket is open.
  TOKEN_MISSING: { close: CloseCode.PolicyViolation, http: 'TOKEN_MISSING' },
  TOKEN_INVALID: { close: CloseCode.PolicyViolation, http: 'TOKEN_INVALID' },
  TOKEN_AMBIGUOUS: { close: CloseCode.PolicyViolation, http: 'TOKEN_AMBIGUOUS' },
  PROTOCOL_INVALID: { close: CloseCode.PolicyViolation, http: 'PROTOCOL_INVALID' },
  ROOM_FORBIDDEN: { close: CloseCode.PolicyViolation, http: 'ROOM_FORBIDDEN' },
  AUTH_UNAVAILABLE: { close: CloseCode.TryAgainLater, http: 'AUTH_UNAVAILABLE' },
  // An app's onConnect hook refused the connection, before the upgrade.
  CONNECTION_REFUSED: { close: CloseCode.PolicyViolation, http: 'CONNECTION_REFUSED' },
  // Raised inside the server and handled there; one that escapes is the server's own failure.
  CONFIG_ERROR: INTERNAL,
  SNAPSHOT_CONFLICT: INTERNAL,
  // A request that met the room's deletion (a restore): the deletion won.
  ROOM_DELETED: { close: CloseCode.RoomDeleted, http: 'ROOM_DELETED' },
  RESTORE_MISMATCH: INTERNAL,
  HEARTBEAT_MISSED: INTERNAL,
  // This server lost the room to a later owner: its clients come back and reach that one.
  STALE_EPOCH: { close: CloseCode.TryAgainLater, http: 'SERVER_BUSY' },
  ROOM_MOVED: { close: CloseCode.TryAgainLater, http: 'SERVER_BUSY' },
} as const satisfies Record<SymphonyErrorCode, ErrorAnswer>

/** The answer to an access check or upgrade whose authentication failed for a reason of the server's own. */
export const AUTH_FAILED = { code: 'AUTH_FAILED', message: 'authentication could not be completed' } as const

/** An HTTP error reply: `{ "error": { code, message } }` sent with `status`. */
export interface HttpAnswer {
  readonly status: ServerErrorStatus<ServerErrorCode>
  readonly code: ServerErrorCode
  readonly message: string
  /** For a 503 the client should retry: the `Retry-After` header. */
  readonly retryAfterSeconds?: number
}

/** What a WebSocket is closed with. */
export interface CloseAnswer {
  readonly code: CloseCodeValue
  readonly reason: string
}

function answerOf(error: unknown): ErrorAnswer {
  return error instanceof SymphonyError ? ANSWERS[error.code] : INTERNAL
}

/**
 * The HTTP reply for `error`; one the table calls internal (or any foreign error) is answered
 * as `internal` says (by default 500 `INTERNAL_ERROR`), without its message.
 */
export function httpAnswer(
  error: unknown,
  internal: { code: ServerErrorCode; message: string } = {
    code: 'INTERNAL_ERROR',
    message: 'internal error',
  },
): HttpAnswer {
  const { http } = answerOf(error)
  if (http === INTERNAL.http || !(error instanceof SymphonyError)) {
    return { status: SERVER_ERROR_CODES[internal.code], code: internal.code, message: internal.message }
  }
  const retryAfterSeconds = error instanceof AuthError ? error.retryAfterSeconds : undefined
  return {
    status: SERVER_ERROR_CODES[http],
    code: http,
    message: error.message,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  }
}

/** The close code and reason for an error raised while serving a connection; internal ones hide their message. */
export function closeAnswer(error: unknown): CloseAnswer {
  const { close } = answerOf(error)
  if (close === INTERNAL.close || !(error instanceof SymphonyError)) {
    return { code: CloseCode.InternalError, reason: 'internal error' }
  }
  return { code: close, reason: error.message }
}
