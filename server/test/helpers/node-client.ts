import {
  type ClientOptions,
  createClient,
  type Room,
  type SymphonyClient,
  type SymphonyClientError,
} from '@symphony/client'
import WebSocket from 'ws'

const clients = new Set<SymphonyClient>()

/** Our client as a Node app would use it: `ws` for WebSocket, no IndexedDB, fast retries. */
export function nodeClient(url: string, options: Partial<ClientOptions> = {}): SymphonyClient {
  const c = createClient({
    url,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    reconnect: { baseDelayMs: 20, maxDelayMs: 100 },
    ...options,
  })
  clients.add(c)
  return c
}

/** Destroys every client `nodeClient` made (use in `afterEach`). */
export async function destroyNodeClients(): Promise<void> {
  await Promise.all([...clients].map((c) => c.destroy()))
  clients.clear()
}

/** Collects the errors a room reports. */
export function recordErrors(room: Room): SymphonyClientError[] {
  const errors: SymphonyClientError[] = []
  room.on('error', (error) => errors.push(error))
  return errors
}
