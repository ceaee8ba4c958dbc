import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import { EditEncoder } from './edit-encoder.js'
import { LeanWebSocket } from './lean-websocket.js'
import { type EditRecord, type PresenceRecord, writeRecord } from './records.js'
import { roomUrl, type UserSetup, type VirtualUser } from './virtual-user.js'
import {
  awarenessMessage,
  type Framing,
  framingFor,
  MESSAGE_SYNC,
  readAwarenessUpdate,
  readFrame,
  SYNC_STEP1,
  SYNC_STEP2,
  syncStep1,
  syncStep2,
  syncUpdate,
} from './wire.js'

const REMOTE = Symbol('remote')

/**
 * A virtual user that speaks the y-websocket protocol itself. A user that only sends writes its
 * edits with an `EditEncoder` (no `Y.Doc` transaction) and, once synced, reads no more than the
 * first two bytes of what it receives, so one core drives thousands of them; its `Y.Doc` stays
 * empty, so a sync step 1 after its first edit gets an empty answer (the server holds its edits).
 * The room's observer (and the convergence check's replica) applies everything, like a real client.
 */
export class LightUser implements VirtualUser {
  readonly doc = new Y.Doc()
  #socket: LeanWebSocket | null = null
  #onClosed: (() => void) | null = null
  #presenceClock = 0
  #synced = false
  #closing = false
  readonly #framing: Framing
  /** Set for a user that only sends; null for one that keeps a replica. */
  readonly #edits: EditEncoder | null

  constructor(private readonly setup: UserSetup) {
    this.#framing = framingFor(setup.protocol ?? 'y-websocket', setup.room)
    const keepsReplica = Boolean(setup.observer || setup.replica)
    this.#edits = keepsReplica ? null : new EditEncoder(this.doc.clientID, setup.edit)
    this.setup.observer?.watch(this.doc)
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== REMOTE) this.#send(syncUpdate(update))
    })
  }

  get clientId(): number {
    return this.doc.clientID
  }

  connect(): Promise<void> {
    const { measures, serverUrl, room, token } = this.setup
    measures.count('connectAttempts')
    const started = performance.now()
    return new Promise((resolve, reject) => {
      let settled = false
      const fail = (reason: string) => {
        if (settled) return
        settled = true
        measures.error('connectErrors', `connect ${room}: ${reason}`)
        this.#socket?.terminate()
        reject(new Error(reason))
      }
      this.#socket = new LeanWebSocket(roomUrl(serverUrl, room, token), {
        open: () => {
          for (const message of this.#framing.greeting) this.#socket?.send(message)
          this.#send(syncStep1(Y.encodeStateVector(this.doc)))
        },
        refused: (_status, reason) => fail(reason),
        close: (code, reason) => {
          this.#onClosed?.()
          if (!this.#synced) return fail(`closed ${code} ${reason} before sync`)
          if (!this.#closing) measures.error('unexpectedCloses', `closed ${code} ${reason}`.trim())
        },
        message: (data) => {
          measures.count('framesReceived')
          measures.count('bytesReceived', data.byteLength)
          if (this.#receive(data) && !settled) {
            settled = true
            this.#synced = true
            measures.record('connect', performance.now() - started)
            measures.count('connected')
            resolve()
          }
        },
      })
    })
  }

  edit(record: EditRecord): void {
    if (this.#edits) this.#send(syncUpdate(this.#edits.encode(record)))
    else writeRecord(this.doc, this.setup.edit, record)
  }

  setPresence(state: PresenceRecord): void {
    this.#send(awarenessMessage({ clientId: this.doc.clientID, clock: ++this.#presenceClock, state }))
  }

  close(): Promise<void> {
    this.#closing = true
    const socket = this.#socket
    this.doc.destroy()
    if (!socket?.isOpen) return Promise.resolve()
    return new Promise((resolve) => {
      this.#onClosed = resolve
      socket.close(CloseCode.Normal)
    })
  }

  /** Handles one frame; true when it was the server's answer to our sync step 1. */
  #receive(data: Uint8Array): boolean {
    const message = this.#framing.unwrap(data)
    const syncRequest = message[0] === MESSAGE_SYNC && message[1] === SYNC_STEP1
    if (this.#synced && this.#edits && !syncRequest) return false
    let frame: ReturnType<typeof readFrame>
    try {
      frame = readFrame(message)
    } catch (error) {
      this.setup.measures.error('errors', `unreadable frame: ${(error as Error).message}`)
      return false
    }
    const observer = this.setup.observer
    if (frame.type === 'sync') {
      if (frame.kind === SYNC_STEP1) this.#send(syncStep2(Y.encodeStateAsUpdate(this.doc, frame.payload)))
      else if (observer || this.setup.replica) Y.applyUpdate(this.doc, frame.payload, REMOTE)
      return frame.kind === SYNC_STEP2
    }
    if (frame.type === 'awareness' && observer) {
      for (const entry of readAwarenessUpdate(frame.payload)) {
        observer.presence(entry.clientId, entry.state, this.doc.clientID)
      }
    }
    return false
  }

  #send(message: Uint8Array): void {
    this.#socket?.send(this.#framing.wrap(message))
  }
}
