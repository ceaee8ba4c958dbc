import { createClient, type Room } from '@symphony/client'
import WebSocket from 'ws'
import type { Measures } from '../measurement/measures.js'
import { type EditRecord, type PresenceRecord, writeRecord } from './records.js'
import type { UserSetup, VirtualUser } from './virtual-user.js'

// y-websocket's provider adds a process 'exit' listener per instance in Node: hundreds are expected.
process.setMaxListeners(0)

/**
 * A virtual user running the real client library (`--real-clients`): heavier per user, but it
 * measures what an application gets, reconnects included.
 */
export class RealClientUser implements VirtualUser {
  readonly #room: Room<PresenceRecord>
  #synced = false
  #closing = false

  constructor(private readonly setup: UserSetup) {
    const client = createClient({
      url: setup.serverUrl,
      token: setup.token,
      offline: false,
      crossTab: false,
      WebSocket: countingWebSocket(setup.measures),
    })
    this.#room = client.enter<PresenceRecord>(setup.room)
    setup.observer?.watch(this.#room.doc)
    this.#room.on('error', (error) => setup.measures.error('errors', `${setup.room}: ${error.message}`))
    this.#room.on('status', (status) => {
      if (status === 'offline' && this.#synced && !this.#closing) {
        setup.measures.error('unexpectedCloses', `${setup.room}: connection lost`)
      }
    })
    const observer = setup.observer
    if (observer) {
      this.#room.presence.subscribe((others) => {
        for (const peer of others) observer.presence(peer.clientId, peer, this.clientId)
      })
    }
  }

  get clientId(): number {
    return this.#room.doc.clientID
  }

  get doc() {
    return this.#room.doc
  }

  async connect(): Promise<void> {
    const { measures } = this.setup
    measures.count('connectAttempts')
    const started = performance.now()
    try {
      await this.#room.whenSynced()
    } catch (error) {
      measures.error('connectErrors', `connect ${this.setup.room}: ${(error as Error).message}`)
      throw error
    }
    this.#synced = true
    measures.record('connect', performance.now() - started)
    measures.count('connected')
  }

  edit(record: EditRecord): void {
    writeRecord(this.#room.doc, this.setup.edit, record)
  }

  setPresence(state: PresenceRecord): void {
    this.#room.presence.set(state)
  }

  async close(): Promise<void> {
    this.#closing = true
    await this.#room.close()
  }
}

/** The `ws` WebSocket, counting what arrives so both modes report the same delivery figures. */
function countingWebSocket(measures: Measures): typeof globalThis.WebSocket {
  class CountingWebSocket extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args)
      this.on('message', (data: Buffer) => {
        measures.count('framesReceived')
        measures.count('bytesReceived', data.byteLength)
      })
    }
  }
  return CountingWebSocket as unknown as typeof globalThis.WebSocket
}
