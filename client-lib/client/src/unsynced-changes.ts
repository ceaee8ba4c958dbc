import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import type { WebsocketProvider } from 'y-websocket'
import type * as Y from 'yjs'
import { MESSAGE_SYNC_STATUS } from './wire/message-types.js'

/**
 * Tracks whether the server holds this client's edits (see `sync-status-protocol.ts`). Every
 * local change bumps a version; after its updates the client sends the version it has sent so
 * far, and the server echoes it once it holds all of them. One request is in flight at a time,
 * so a fast typist costs one extra frame per round trip, not one per keystroke.
 */
export class UnsyncedChanges {
  /** Version of the latest local change. Changes loaded from IndexedDB count: the server may lack them. */
  #local = 0
  #acknowledged = 0
  /** The version asked about on the current socket, until answered. */
  #inFlight: number | null = null
  /** The server on the current socket announced that it answers. */
  #serverAnswers = false
  #unsynced = false

  constructor(
    private readonly provider: WebsocketProvider,
    private readonly doc: Y.Doc,
    private readonly onChange: (unsynced: boolean) => void,
  ) {
    provider.messageHandlers[MESSAGE_SYNC_STATUS] = (_encoder, decoder) => {
      this.#received(decoding.readVarUint8Array(decoder))
    }
    // Registered after the provider's own listener, so its update frame is sent before we ask.
    doc.on('update', this.#changed)
  }

  get unsynced(): boolean {
    return this.#unsynced
  }

  /** The socket closed: an unanswered request never will be, and the next server may not answer. */
  disconnected(): void {
    this.#inFlight = null
    this.#serverAnswers = false
  }

  /** The room caught up after a (re)connection; the edits made meanwhile went with our sync step 2. */
  synced(): void {
    this.#ask()
  }

  /** The room was deleted on the server: nothing here waits for it any more, now or later. */
  discard(): void {
    this.destroy()
    this.#inFlight = null
    this.#set(false)
  }

  destroy(): void {
    this.doc.off('update', this.#changed)
  }

  readonly #changed = (_update: Uint8Array, origin: unknown): void => {
    if (origin === this.provider) return // from the server, or from another tab through it
    this.#local++
    this.#set(true)
    // After the rest of this turn's changes, which the same request then covers.
    queueMicrotask(() => this.#ask())
  }

  #received(payload: Uint8Array): void {
    if (payload.length === 0) {
      this.#serverAnswers = true
      return
    }
    const version = decoding.readVarUint(decoding.createDecoder(payload))
    if (version !== this.#inFlight) return // an answer from an earlier socket's request
    this.#inFlight = null
    this.#acknowledged = Math.max(this.#acknowledged, version)
    if (this.#acknowledged >= this.#local) this.#set(false)
    else this.#ask()
  }

  #ask(): void {
    const ws = this.provider.ws
    const ready = this.#serverAnswers && this.provider.synced && ws?.readyState === 1
    if (!ready || this.#inFlight !== null || this.#local <= this.#acknowledged) return
    this.#inFlight = this.#local
    const request = encoding.createEncoder()
    encoding.writeVarUint(request, MESSAGE_SYNC_STATUS)
    encoding.writeVarUint8Array(request, encodeVersion(this.#local))
    ws.send(encoding.toUint8Array(request))
  }

  #set(unsynced: boolean): void {
    if (unsynced === this.#unsynced) return
    this.#unsynced = unsynced
    this.onChange(unsynced)
  }
}

function encodeVersion(version: number): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, version)
  return encoding.toUint8Array(encoder)
}
