import * as Y from 'yjs'
import { connectClient, type TestClient } from './clients.js'

/**
 * A real y-websocket client that edits on its own key (the array `c<index>`, pushing 0, 1, 2…),
 * so any copy of the room tells exactly which of its edits it holds, and that records when its
 * connection drops and comes back.
 */
export class EditingClient {
  readonly client: TestClient
  /** `performance.now()` of each time the provider connected (the first included). */
  readonly connectedAt: number[] = []
  readonly disconnectedAt: number[] = []
  sent = 0

  constructor(
    wsUrl: string,
    room: string,
    readonly index: number,
    params: Record<string, string> = {},
  ) {
    this.client = connectClient(wsUrl, room, params)
    this.client.provider.on('status', ({ status }: { status: string }) => {
      if (status === 'connected') this.connectedAt.push(performance.now())
      if (status === 'disconnected') this.disconnectedAt.push(performance.now())
    })
  }

  get connected(): boolean {
    return this.client.provider.wsconnected && this.client.provider.synced
  }

  edit(): void {
    this.client.doc.getArray<number>(`c${this.index}`).push([this.sent++])
  }

  /** Whether `doc` holds every edit this client made, in order. */
  isIn(doc: Y.Doc): boolean {
    const edits = doc.getArray<number>(`c${this.index}`).toArray()
    return edits.length === this.sent && edits.every((value, i) => value === i)
  }

  destroy(): void {
    this.client.destroy()
  }
}

/** Whether every client's document holds every client's edits. */
export function converged(clients: EditingClient[]): boolean {
  return clients.every((holder) => clients.every((author) => author.isIn(holder.client.doc)))
}

/** Whether a saved state (a snapshot) holds every client's edits. */
export function holdsAllEdits(state: Uint8Array | null, clients: EditingClient[]): boolean {
  if (!state) return false
  const doc = new Y.Doc()
  Y.applyUpdate(doc, state)
  return clients.every((client) => client.isIn(doc))
}

/** Every client edits every `intervalMs` until the returned function is called. */
export function keepEditing(clients: EditingClient[], intervalMs: number): () => void {
  const timer = setInterval(() => {
    for (const client of clients) client.edit()
  }, intervalMs)
  return () => clearInterval(timer)
}
