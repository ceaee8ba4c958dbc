/**
 * Who sent a broadcast event, as the server that took it from its client says: that server
 * stamps every event it relays with the connection and the token's identity, and never takes
 * them from the client, so an event can be trusted to come from whom it names.
 *
 * @example
 * room.on('event', (data, from) => { if (from?.userId === ownerId) markApproved() })
 */
export interface EventSender {
  /** The sending connection (`<serverId>:<boot>:<n>`, as in webhooks): one tab of one user. */
  connectionId: string
  /** The token's `sub` (`anonymous` when the server runs with `AUTH=none`). */
  userId: string
  /** The token's `name` claim, or null when it has none. */
  name: string | null
}

/** The sender as the JSON text that follows a relayed event's payload (see `MESSAGE_BROADCAST`). */
export function encodeEventSender({ connectionId, userId, name }: EventSender): string {
  return JSON.stringify({ connectionId, userId, name })
}

/** The sender a relayed event names, or null when the text is not one. */
export function decodeEventSender(text: string): EventSender | null {
  try {
    const value = JSON.parse(text) as Partial<EventSender> | null
    const { connectionId, userId, name } = value ?? {}
    if (typeof connectionId !== 'string' || typeof userId !== 'string') return null
    if (name !== null && typeof name !== 'string') return null
    return { connectionId, userId, name }
  } catch {
    return null
  }
}
