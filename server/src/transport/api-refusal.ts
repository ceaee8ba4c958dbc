import type { ServerErrorCode, ServerErrorStatus } from '@symphony/client/wire'
import {
  DocumentTooLargeError,
  MessageTooBigError,
  PendingLimitError,
  ProtocolError,
  ServerBusyError,
  SnapshotsUnavailableError,
  SnapshotVersionNotFoundError,
  VersionNotRestorableError,
} from '../errors.js'

/** An answer the REST API sends as `{ "error": { "code", "message" } }`. */
export class ApiRefusal<C extends ServerErrorCode = ServerErrorCode> extends Error {
  constructor(
    readonly status: ServerErrorStatus<C>,
    readonly code: C,
    message: string,
  ) {
    super(message)
  }
}

/** What the API answers for an error a request ran into (500 for one that is the server's own). */
export function toRefusal(error: unknown): ApiRefusal {
  if (error instanceof ApiRefusal) return error
  if (error instanceof ProtocolError) return new ApiRefusal(400, 'UPDATE_INVALID', error.message)
  if (error instanceof DocumentTooLargeError) return new ApiRefusal(413, 'DOCUMENT_TOO_LARGE', error.message)
  if (error instanceof MessageTooBigError) return new ApiRefusal(413, 'UPDATE_TOO_LARGE', error.message)
  if (error instanceof PendingLimitError) return new ApiRefusal(422, 'UPDATE_WAITS_TOO_MUCH', error.message)
  if (error instanceof ServerBusyError) return new ApiRefusal(503, 'SERVER_BUSY', error.message)
  if (error instanceof SnapshotVersionNotFoundError)
    return new ApiRefusal(404, 'VERSION_NOT_FOUND', error.message)
  if (error instanceof VersionNotRestorableError)
    return new ApiRefusal(409, 'VERSION_NOT_RESTORABLE', error.message)
  if (error instanceof SnapshotsUnavailableError)
    return new ApiRefusal(503, 'SNAPSHOTS_UNAVAILABLE', error.message)
  return new ApiRefusal(500, 'INTERNAL_ERROR', 'internal error')
}
