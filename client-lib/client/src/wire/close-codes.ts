/**
 * WebSocket close codes used by Symphony, shared by the server and the client library so both
 * sides agree on what a close means and whether reconnecting can help.
 *
 * @example
 * if (error.details.closeCode === CloseCode.DocumentTooLarge) warn('this board is full')
 */
export const CloseCode = {
  /** Normal closure. */
  Normal: 1000,
  /** The server is shutting down or restarting: reconnect (the load balancer picks another server). */
  GoingAway: 1001,
  /** A frame could not be decoded as the y-websocket protocol. */
  ProtocolError: 1002,
  /** A text frame arrived; the protocol is binary only. */
  UnsupportedData: 1003,
  /** The peer broke a rule of the connection's use (a load agent nobody expected). */
  PolicyViolation: 1008,
  /** A message was larger than the server's maximum message size. */
  MessageTooBig: 1009,
  /** The server failed while handling the connection. */
  InternalError: 1011,
  /**
   * The server is at its connection limit, or the room did not load within the client's wait
   * (`JOIN_WAIT_MS`; a reconnection joins the load still going).
   */
  TryAgainLater: 1013,
  /** The room already has its maximum number of connections. */
  RoomFull: 4001,
  /** The client sent more messages per second than allowed. */
  RateLimited: 4002,
  /** The client did not read what the server sent fast enough. */
  SlowConsumer: 4003,
  /**
   * The client answered no ping and read nothing of what the server had queued for a whole ping
   * interval (`PING_INTERVAL_MS`): its network or process is gone, or it stopped reading. A client
   * still reading a big download is never closed for a pong stuck behind it. Reconnect.
   */
  Unresponsive: 4008,
  /** The update would grow the document past the server's size ceiling. */
  DocumentTooLarge: 4004,
  /**
   * The update depends on updates the room never received, and the room already holds as much
   * waiting for missing updates as it may.
   */
  TooMuchPending: 4005,
  /** The connection's token expired: reconnect with a fresh one (nothing is lost). */
  TokenExpired: 4006,
  /**
   * The server was over its memory budget (`MEMORY_BUDGET_BYTES`) and closed the connections
   * holding the most: unsent updates, frames waiting, presence. Reconnect later, backing off:
   * nothing is lost, the client sends what the server lacks when it syncs again.
   */
  MemoryBudgetExceeded: 4013,
  /**
   * A read-only connection sent what only writers may (a broadcast event). Reconnecting is fine;
   * sending it again with the same token is closed again. The number mirrors HTTP 403.
   */
  ReadOnly: 4403,
  /**
   * The server's app refused an update (its `beforeApply` hook, e.g. a schema check): the reason
   * says why. Not applied, not stored, seen by no one; the client's copy still holds it, so
   * reconnecting would send it again. In y-websocket's 4400–4499 range (its provider stops too);
   * the number mirrors HTTP 422.
   */
  UpdateRefused: 4422,
  /**
   * The room was deleted (the REST API's DELETE): its content is gone, do not reconnect. In
   * y-websocket's 4400–4499 range, so its provider does not reconnect either.
   */
  RoomDeleted: 4404,
} as const

/**
 * A close code's name.
 *
 * @example
 * const name: CloseCodeName = 'RoomFull'
 */
export type CloseCodeName = keyof typeof CloseCode
/**
 * A close code's number.
 *
 * @example
 * const code: CloseCodeValue = CloseCode.RoomFull // 4001
 */
export type CloseCodeValue = (typeof CloseCode)[CloseCodeName]

/**
 * Codes after which reconnecting cannot succeed: the client would send the same oversized or
 * malformed data again on the next sync, and be closed again, in a loop.
 */
const FINAL_CODES: ReadonlySet<number> = new Set([
  CloseCode.ProtocolError,
  CloseCode.UnsupportedData,
  CloseCode.MessageTooBig,
  CloseCode.DocumentTooLarge,
  CloseCode.TooMuchPending,
  CloseCode.UpdateRefused,
  CloseCode.RoomDeleted,
])

/**
 * Whether a client should reconnect after the server closed it with `code`.
 *
 * @example
 * socket.onclose = (e) => { if (shouldReconnect(e.code)) scheduleReconnect() }
 */
export function shouldReconnect(code: number): boolean {
  return !FINAL_CODES.has(code)
}

/** Codes that say the server is short of something now: coming straight back would only add to it. */
const BACK_OFF_CODES: ReadonlySet<number> = new Set([
  CloseCode.TryAgainLater,
  CloseCode.SlowConsumer,
  CloseCode.MemoryBudgetExceeded,
])

/**
 * Whether a client closed with `code` should keep backing off after it syncs again, rather than
 * start over from short waits: the server asked it to come back later.
 *
 * @example
 * if (!shouldBackOff(lastCloseCode)) schedule.reset() // once synced
 */
export function shouldBackOff(code: number): boolean {
  return BACK_OFF_CODES.has(code)
}

/**
 * A short human name for a close code, for logs and error messages.
 *
 * @example
 * closeCodeName(4004) // 'DocumentTooLarge'
 */
export function closeCodeName(code: number): CloseCodeName | 'Unknown' {
  for (const [name, value] of Object.entries(CloseCode)) {
    if (value === code) return name as CloseCodeName
  }
  return 'Unknown'
}
