import type { ServerErrorCode } from '@symphony/client/wire'

/** An error answer of the REST API: its HTTP status and the server's `{ error: { code, message } }`. */
export class SymphonyApiError extends Error {
  constructor(
    readonly status: number,
    /** The server's error code, or `HTTP_ERROR` when its answer carried none (a proxy's error page). */
    readonly code: ServerErrorCode | 'HTTP_ERROR',
    message: string,
  ) {
    super(message)
    this.name = 'SymphonyApiError'
  }
}
