import type { ServerErrorCode, ServerErrorStatus } from '@symphony/client/wire'

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
