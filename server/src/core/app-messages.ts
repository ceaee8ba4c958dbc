import { type AppReply, type EventSender, parseAppRequest } from '@symphony/client/wire'
import { DeadlineError, within } from '../deadline.js'
import { ProtocolError } from '../errors.js'
import type { Logger } from '../logger.js'
import { checkBroadcast, encodeAppReply } from '../protocol/codec.js'
import { emptyTally } from '../protocol/value-cost.js'
import { type AppMessage, type AppMessageHandler, HookRefusal } from '../server-hooks.js'
import {
  type AppMessageQuota,
  MAX_APP_MESSAGE_BYTES_HELD,
  MAX_APP_MESSAGES_RUNNING,
} from './app-message-quota.js'
import type { RoomMember } from './room-member.js'

/** What a room's app messages are handled with. */
export interface AppMessagesInit {
  room: string
  handlers: Readonly<Record<string, AppMessageHandler>>
  /** `HOOK_TIMEOUT_MS`: the longest a handler may take before the sender is answered `HOOK_TIMEOUT`. */
  timeoutMs: number
  /** `MAX_PRESENCE_BYTES`: the largest message (and broadcast) a client may send. */
  maxBytes: number
  /** Sends a broadcast event (JSON text) to the room's clients, on every server, from `sender`. */
  broadcast: (payload: Uint8Array, sender: EventSender) => void
  /** What the server stamps on the events it sends itself. */
  serverSender: EventSender
  /** What each user's messages being handled may hold, on the whole server. */
  quota: AppMessageQuota
  logger: Logger
}

/**
 * The app's own message types (`hooks.messages`): each request is handed to its handler with
 * the room and the sender's identity, and the sender alone gets the answer. Handlers run
 * concurrently (a slow one holds no other frame), within the sender's user's `quota` on the whole
 * server, held until each handler really settles (a handler past `timeoutMs` still runs, and
 * holds what it was given), whatever connection or room the user sent it from.
 */
export class AppMessages {
  readonly #init: AppMessagesInit

  constructor(init: AppMessagesInit) {
    this.#init = init
  }

  /** Handles one request of `sender`'s; throws `ProtocolError` / `MessageTooBigError` for a malformed one. */
  receive(sender: RoomMember, payload: Uint8Array): void {
    const { room, handlers, maxBytes } = this.#init
    const values = emptyTally()
    checkBroadcast(payload, maxBytes, values)
    const request = parseAppRequest(new TextDecoder().decode(payload))
    if (!request) throw new ProtocolError('an app message that is not { id, type, data }')
    const { id, type, data } = request
    const handler = Object.hasOwn(handlers, type) ? handlers[type] : undefined
    if (!handler) {
      this.#reply(sender, { id, error: { code: 'UNKNOWN_MESSAGE_TYPE', message: `no handler for ${type}` } })
      return
    }
    // Held as text while decoded, then as the values it builds.
    const release = this.#init.quota.take(sender.heldBy, 2 * payload.length + values.bytes)
    if (!release) {
      const message = `this user's messages being handled hold all they may (${MAX_APP_MESSAGES_RUNNING} messages, ${MAX_APP_MESSAGE_BYTES_HELD / 1024} KiB); wait for their replies`
      this.#reply(sender, { id, error: { code: 'TOO_MANY_MESSAGES', message } })
      return
    }
    const message: AppMessage = {
      room,
      type,
      data,
      user: { userId: sender.identity.userId, name: sender.identity.name },
      connectionId: sender.id,
      canWrite: sender.canWrite,
      broadcast: (event) => {
        this.#init.broadcast(new TextEncoder().encode(JSON.stringify(event ?? null)), this.#init.serverSender)
      },
    }
    const handled = Promise.resolve().then(() => handler(message))
    handled.then(release, release)
    within(handled, this.#init.timeoutMs, `the ${type} message handler`).then(
      (result) => this.#reply(sender, { id, data: result ?? null }),
      (error: unknown) => this.#reply(sender, { id, error: this.#errorOf(error, type) }),
    )
  }

  #errorOf(error: unknown, type: string): Extract<AppReply, { error: unknown }>['error'] {
    if (error instanceof HookRefusal) return { code: 'MESSAGE_REFUSED', message: error.message }
    if (error instanceof DeadlineError) {
      this.#init.logger.warn({ room: this.#init.room, type }, 'an app message handler did not answer in time')
      return { code: 'HOOK_TIMEOUT', message: `the server did not answer within ${this.#init.timeoutMs} ms` }
    }
    this.#init.logger.error({ err: error, room: this.#init.room, type }, 'an app message handler threw')
    return { code: 'MESSAGE_FAILED', message: 'the server could not handle this message' }
  }

  #reply(sender: RoomMember, reply: AppReply): void {
    let frame: Uint8Array
    try {
      frame = encodeAppReply(reply)
    } catch (error) {
      frame = encodeAppReply({ id: reply.id, error: this.#errorOf(error, 'reply') }) // not JSON
    }
    sender.send(frame)
  }
}
