import { MessageType } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as syncProtocol from 'y-protocols/sync'
import * as Y from 'yjs'
import type { Transport } from '../../../src/core/connection.js'
import { decodeMessage, type Message } from '../../../src/protocol/codec.js'

/** Transaction origin of what the client applies from the server: never sent back. */
const FROM_SERVER = Symbol('from-server')

export interface Closed {
  code: number
  reason: string
}

/**
 * The server's end of an in-process socket pair: what the connection sends lands in the client
 * at once (as bytes on a socket would, in order), and `close` is recorded. Tests may make the
 * socket look backed up (`bufferedAmount`, `holdSends`) or broken (`failSends`).
 */
export class TestTransport implements Transport {
  bufferedAmount = 0
  failSends = false
  /** Frames are delivered but never reported sent (a peer that stopped reading), until `release`. */
  holdSends = false
  closed: Closed | null = null
  #held: (() => void)[] = []

  constructor(
    private readonly deliver: (frame: Uint8Array) => void,
    private readonly onClose: (closed: Closed) => void,
  ) {}

  send(frame: Uint8Array, onSent?: () => void): void {
    if (this.failSends) throw new Error('injected socket failure')
    if (this.closed) return
    this.deliver(frame)
    if (!onSent) return
    if (this.holdSends) this.#held.push(onSent)
    else queueMicrotask(onSent) // as a socket's write callback, never within the send
  }

  /** The peer reads again: every held frame is reported sent. */
  release(): void {
    this.holdSends = false
    for (const onSent of this.#held.splice(0)) onSent()
  }

  close(code: number, reason: string): void {
    if (this.closed) return
    this.closed = { code, reason }
    this.onClose(this.closed)
  }
}

/**
 * The client's end: a real `Y.Doc` and y-protocols `Awareness`, speaking the y-websocket protocol
 * as its provider does. Local edits are sent as updates; a sync step 1 from the server is answered
 * with step 2 (on a later microtask, as over a socket). Every frame the server sent is kept.
 */
export class TestClient {
  readonly doc: Y.Doc
  readonly awareness: Awareness
  /** Every frame the server sent, in order. */
  readonly received: Uint8Array[] = []
  readonly transport: TestTransport
  #sendToServer: (frame: Uint8Array) => void = () => {}
  #disconnect: () => void = () => {}

  constructor(doc = new Y.Doc(), onClose: (closed: Closed) => void = () => {}) {
    this.doc = doc
    this.awareness = new awarenessProtocol.Awareness(doc)
    this.awareness.setLocalState(null) // present only once a test says so
    this.transport = new TestTransport((frame) => this.#receive(frame), onClose)
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== FROM_SERVER) this.send(syncFrame((e) => syncProtocol.writeUpdate(e, update)))
    })
  }

  /** Connects the client's end to the server's: its frames go to `sendToServer`. */
  plugInto(sendToServer: (frame: Uint8Array) => void, disconnect: () => void): void {
    this.#sendToServer = sendToServer
    this.#disconnect = disconnect
  }

  /** The client closes its socket (the server sees the socket close). */
  disconnect(): void {
    this.#disconnect()
  }

  get closed(): Closed | null {
    return this.transport.closed
  }

  /** The code the server closed the socket with; null while it is open. */
  get closeCode(): number | null {
    return this.transport.closed?.code ?? null
  }

  send(frame: Uint8Array): void {
    this.#sendToServer(frame)
  }

  /** What a provider sends on open: its state vector, so the server answers with what it lacks. */
  sendSyncStep1(): void {
    this.send(syncFrame((e) => syncProtocol.writeSyncStep1(e, this.doc)))
  }

  sendUpdate(update: Uint8Array): void {
    this.send(syncFrame((e) => syncProtocol.writeUpdate(e, update)))
  }

  setPresence(state: Record<string, unknown>): void {
    this.awareness.setLocalState(state)
    this.send(awarenessFrame(this.awareness, [this.doc.clientID]))
  }

  queryPresence(): void {
    this.send(new Uint8Array([MessageType.QueryAwareness]))
  }

  /** The server's frames decoded (those of its own types, such as permission-denied, as `auth`). */
  messages(): Message[] {
    return this.received.map((frame) => decodeMessage(frame))
  }

  /** The updates the server forwarded (sync updates and steps 2 that carry anything). */
  updatesReceived(): Uint8Array[] {
    return this.messages().flatMap((m) =>
      (m.kind === 'update' || m.kind === 'sync-step2') && !isEmpty(m.update) ? [m.update] : [],
    )
  }

  /** The awareness client ids the client sees as present. */
  presentClients(): number[] {
    return [...this.awareness.getStates().keys()].filter((id) => id !== this.doc.clientID).sort()
  }

  text(): string {
    return this.doc.getText('t').toString()
  }

  destroy(): void {
    this.awareness.destroy()
    this.doc.destroy()
  }

  #receive(frame: Uint8Array): void {
    this.received.push(frame)
    const decoder = decoding.createDecoder(frame)
    const type = decoding.readVarUint(decoder)
    if (type === MessageType.Sync) {
      const reply = encoding.createEncoder()
      encoding.writeVarUint(reply, MessageType.Sync)
      syncProtocol.readSyncMessage(decoder, reply, this.doc, FROM_SERVER)
      // Only a sync step 1 asks for an answer (step 2); over a socket it arrives later.
      if (encoding.length(reply) > 1) queueMicrotask(() => this.send(encoding.toUint8Array(reply)))
    } else if (type === MessageType.Awareness) {
      awarenessProtocol.applyAwarenessUpdate(this.awareness, decoding.readVarUint8Array(decoder), FROM_SERVER)
    }
  }
}

type Awareness = awarenessProtocol.Awareness

/** A sync frame whose body `write` writes with y-protocols' sync encoders. */
export function syncFrame(write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MessageType.Sync)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

/** An awareness frame for `clients` of `awareness`, as a provider sends it. */
export function awarenessFrame(awareness: Awareness, clients: number[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MessageType.Awareness)
  encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(awareness, clients))
  return encoding.toUint8Array(encoder)
}

function isEmpty(update: Uint8Array): boolean {
  return update.length === 2 && update[0] === 0 && update[1] === 0
}
