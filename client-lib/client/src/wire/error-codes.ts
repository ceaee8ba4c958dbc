/**
 * The `code` of a sync server's HTTP error body (`{ "error": { "code", "message" } }`): upgrade
 * refusals, the access check, the REST API and the development token route. Clients branch on
 * the code; the message is for people.
 */
export const SERVER_ERROR_CODES = {
  /** 400: the path names no valid room (see `ROOM_NAME_RULE`). */
  ROOM_NAME_INVALID: 400,
  /** 400: the `Sec-WebSocket-Protocol` header is malformed or offers more than one token. */
  PROTOCOL_INVALID: 400,
  /** 400: a token came both in `?token=` and in a header; neither is trusted. */
  TOKEN_AMBIGUOUS: 400,
  /** 400: a REST update that Yjs cannot apply. */
  UPDATE_INVALID: 400,
  /** 400: a REST `stateVector` that is not base64 of a state vector. */
  STATE_VECTOR_INVALID: 400,
  /** 400: a room listing's `prefix` is over 128 characters or holds a control character. */
  PREFIX_INVALID: 400,
  /** 400: a room listing's `limit` is not a whole number from 1 to the server's maximum. */
  LIMIT_INVALID: 400,
  /** 400: a room listing's `cursor` is not one the server gave as `nextCursor`. */
  CURSOR_INVALID: 400,
  /** 400: a version id that no store gives (letters, digits and `_ - .`, at most 256). */
  VERSION_ID_INVALID: 400,
  /** 400: the development token route was given an unusable display name. */
  NAME_INVALID: 400,
  /** 401: auth is on and no token was sent. */
  TOKEN_MISSING: 401,
  /** 401: the token failed verification (signature, expiry, claims). */
  TOKEN_INVALID: 401,
  /** 401: the REST API's bearer secret is missing or wrong. */
  UNAUTHORIZED: 401,
  /** 403: the token does not grant this room. */
  ROOM_FORBIDDEN: 403,
  /** 403: the browser origin is not in `ALLOWED_ORIGINS`. */
  ORIGIN_NOT_ALLOWED: 403,
  /** 403: the embedding app's `onConnect` hook refused the connection. */
  CONNECTION_REFUSED: 403,
  /** 404: no such route (or the REST API is off). */
  NOT_FOUND: 404,
  /** 404: the room has no saved version of that id (never, or no longer kept). */
  VERSION_NOT_FOUND: 404,
  /** 405: the route does not take this method. */
  METHOD_NOT_ALLOWED: 405,
  /** 409: the version is the room's deletion, or of an incarnation deleted since: it cannot be restored. */
  VERSION_NOT_RESTORABLE: 409,
  /** 410: the room was deleted while the request ran (a restore it met): the deletion won, nothing was restored. */
  ROOM_DELETED: 410,
  /** 413: a REST update over the message size limit. */
  UPDATE_TOO_LARGE: 413,
  /** 413: the update would grow the document past its ceiling. */
  DOCUMENT_TOO_LARGE: 413,
  /** 415: a REST update not sent as `application/octet-stream`. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** 422: the server's app refused the update (its `beforeApply` hook); the message says why. */
  UPDATE_REFUSED: 422,
  /** 422: the update waits for updates the room never received, past the room's budget. */
  UPDATE_WAITS_TOO_MUCH: 422,
  /** 500: the server could not finish authenticating the request. */
  AUTH_FAILED: 500,
  /** 500: the development token route could not sign. */
  TOKEN_FAILED: 500,
  /** 500: `/metrics` could not be rendered. */
  METRICS_FAILED: 500,
  /** 500: the server failed; it logged the error. */
  INTERNAL_ERROR: 500,
  /** 501: the room listing reads the metadata database, and the server keeps none (`DATABASE_URL=none`). */
  METADATA_OFF: 501,
  /** 503 with `Retry-After`: the key set (JWKS) could not be fetched; retry. */
  AUTH_UNAVAILABLE: 503,
  /** 503: the server is shutting down; the load balancer sends the retry elsewhere. */
  SHUTTING_DOWN: 503,
  /** 503: the room could not be loaded right now; retry. */
  ROOM_UNAVAILABLE: 503,
  /** 503: a REST update is applied but not yet durable (the stores are failing); sending it again is harmless. */
  UPDATE_NOT_SAVED: 503,
  /** 503: the metadata database did not answer the room listing; retry. */
  METADATA_UNAVAILABLE: 503,
  /** 503: the snapshot store did not answer a versions request; retry. */
  SNAPSHOTS_UNAVAILABLE: 503,
  /** 503: the server is too busy for this request right now; retry. */
  SERVER_BUSY: 503,
} as const

/** A sync server's HTTP error code. */
export type ServerErrorCode = keyof typeof SERVER_ERROR_CODES

/** The HTTP status a server error code is always sent with. */
export type ServerErrorStatus<C extends ServerErrorCode> = (typeof SERVER_ERROR_CODES)[C]
