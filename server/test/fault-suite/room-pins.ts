import WebSocket from 'ws'
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'

/**
 * A reader on every server for every room, so each server keeps every room loaded through the run
 * and the replicas can be compared after a heal. A pin never edits, and whenever its socket closes
 * it starts over with a fresh document: a pin never carries a copy of a room from one connection
 * to the next, so it cannot hand back what a server lost.
 */
export class RoomPins {
  readonly #pins = new Map<string, { provider: WebsocketProvider; doc: Y.Doc }>()
  #closed = false

  constructor(
    private readonly urls: string[],
    rooms: string[],
    /** Each room's token, for a cluster with auth on. */
    private readonly tokens: ReadonlyMap<string, string> = new Map(),
  ) {
    for (const [server] of urls.entries()) for (const room of rooms) this.#pin(server, room)
  }

  /** Whether every pin is connected and synced. */
  get synced(): boolean {
    return [...this.#pins.values()].every(({ provider }) => provider.synced)
  }

  destroy(): void {
    this.#closed = true
    for (const { provider, doc } of this.#pins.values()) {
      provider.destroy()
      doc.destroy()
    }
    this.#pins.clear()
  }

  #pin(server: number, room: string): void {
    if (this.#closed) return
    const key = `${server}\n${room}`
    const doc = new Y.Doc()
    const token = this.tokens.get(room)
    const provider = new WebsocketProvider(this.urls[server] ?? '', room, doc, {
      WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
      disableBc: true,
      params: token ? { token } : {},
    })
    this.#pins.set(key, { provider, doc })
    let opened = false
    let replaced = false
    provider.on('status', ({ status }: { status: string }) => {
      if (status === 'connected') opened = true
    })
    provider.on('connection-close', () => {
      // A socket that never opened received nothing: y-websocket's own retry is harmless then.
      if (!opened || replaced || this.#closed) return
      replaced = true
      provider.destroy()
      doc.destroy()
      setTimeout(() => this.#pin(server, room), 100)
    })
  }
}
