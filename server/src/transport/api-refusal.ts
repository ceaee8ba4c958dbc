import type { ServerErrorCode, ServerErrorStatus } from '@symphony/client/wire'
import { httpAnswer } from '../error-answers.js'

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
  const { status, code, message } = httpAnswer(error)
  return new ApiRefusal(status, code, message)
}
