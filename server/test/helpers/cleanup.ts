import { destroyClients } from './clients.js'
import { terminateRawSockets } from './raw-socket.js'
import { stopTestServers } from './test-server.js'

/** Closes every client, raw socket and server a test opened, whether it passed or not. */
export async function cleanUpAfterTest(): Promise<void> {
  destroyClients()
  terminateRawSockets()
  await stopTestServers()
}
