import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import type { WebsocketProvider } from 'y-websocket'
import { SymphonyClientError } from './errors.js'
import { MESSAGE_APP, parseAppReply } from './wire/app-messages.js'

interface Pending {
  resolve(data: unknown): void
  reject(error: SymphonyClientError): void
  timer: ReturnType<typeof setTimeout>
}

/**
 * A room's requests to the server app's own message types (`room.request`), each paired with
 * its reply by an id. A request whose connection closes before the reply, or that waits past its
 * timeout, rejects with `NO_REPLY`: the server may or may not have handled it.
 */
export class AppRequests {
  readonly #pending = new Map<number, Pending>()
  #nextId = 1

  constructor(private readonly provider: WebsocketProvider) {
    provider.messageHandlers[MESSAGE_APP] = (_encoder, decoder) => {
      const reply = parseAppReply(new TextDecoder().decode(decoding.readVarUint8Array(decoder)))
      const pending = reply && this.#pending.get(reply.id)
      if (!reply || !pending) return
      this.#settle(reply.id)
      if ('error' in reply) {
        const { code, message } = reply.error
        pending.reject(new SymphonyClientError('MESSAGE_REFUSED', message, { serverCode: code }))
      } else pending.resolve(reply.data)
    }
  }

  /** Sends `data` to the server's `type` handler on `ws`; resolves with its answer. */
  request(type: string, data: unknown, timeoutMs: number): Promise<unknown> {
    const ws = this.provider.ws
    if (ws?.readyState !== 1) {
      return Promise.reject(new SymphonyClientError('NOT_CONNECTED', 'the room is not connected'))
    }
    const id = this.#nextId++
    const frame = encoding.createEncoder()
    encoding.writeVarUint(frame, MESSAGE_APP)
    encoding.writeVarUint8Array(
      frame,
      new TextEncoder().encode(JSON.stringify({ id, type, data: data ?? null })),
    )
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#settle(id)
        reject(new SymphonyClientError('NO_REPLY', `no reply to ${type} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.#pending.set(id, { resolve, reject, timer })
      ws.send(encoding.toUint8Array(frame))
    })
  }

  /** The connection closed: what waits for a reply gets none. */
  disconnected(): void {
    for (const [id, pending] of this.#pending) {
      this.#settle(id)
      pending.reject(new SymphonyClientError('NO_REPLY', 'the connection closed before the reply'))
    }
  }

  #settle(id: number): void {
    clearTimeout(this.#pending.get(id)?.timer)
    this.#pending.delete(id)
  }
}
