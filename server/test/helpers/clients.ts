import WebSocket from 'ws'
import { WebsocketProvider } from 'y-websocket'
import * as Y from 'yjs'

// The port contract suites wait and name rooms the same way; they are built and published with them.
export { eventually } from '../../src/contracts/eventually.js'
export { uniqueRoom } from '../../src/contracts/unique-room.js'

export interface TestClient {
  doc: Y.Doc
  provider: WebsocketProvider
  destroy(): void
}

const openClients = new Set<TestClient>()

/** Destroys every client the test created, passed or failed (use in `afterEach`). */
export function destroyClients(): void {
  for (const client of openClients) client.destroy()
}

/**
 * A real y-websocket provider, as any app would create it, pointed at `wsUrl` / `room`, on `doc`
 * (a fresh one unless given: a client with an offline copy brings its own).
 */
export function connectClient(
  wsUrl: string,
  room: string,
  params: Record<string, string> = {},
  doc = new Y.Doc(),
): TestClient {
  const provider = new WebsocketProvider(wsUrl, room, doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    params,
    disableBc: true,
  })
  const client: TestClient = {
    doc,
    provider,
    destroy: () => {
      openClients.delete(client)
      provider.destroy()
      doc.destroy()
    },
  }
  openClients.add(client)
  return client
}

/** The code the client's first closed connection got, once it has closed (null until then). */
export function firstCloseCode(client: TestClient): () => number | null {
  let code: number | null = null
  client.provider.once('connection-close', (event: { code?: number } | null) => {
    code = event?.code ?? 0
  })
  return () => code
}

/** Resolves once the provider has completed its first sync with the server. */
export function synced(client: TestClient): Promise<void> {
  if (client.provider.synced) return Promise.resolve()
  return new Promise((resolve) => client.provider.once('sync', () => resolve()))
}

export async function connectSynced(wsUrl: string, room: string, params?: Record<string, string>) {
  const client = connectClient(wsUrl, room, params)
  await synced(client)
  return client
}
