import { hostname } from 'node:os'
import { CloseCode } from '@symphony/client/wire'
import WebSocket from 'ws'
import { type AgentMessage, type CoordinatorMessage, parseMessage } from './agent-protocol.js'
import { runWorker } from './worker.js'

export interface AgentSettings {
  coordinatorUrl: string
  /** Presented to the coordinator as `Authorization: Bearer <joinToken>`. */
  joinToken: string
  name: string
  /** Run one share of rooms and exit, instead of waiting for the next run. */
  once: boolean
}

const FIRST_RETRY_MS = 2000
const LONGEST_RETRY_MS = 30_000

/**
 * Dials the coordinator, runs the rooms it is given, streams a report every second, and (unless
 * `once`) dials again for the next run: on a fleet, agents can be started before the coordinator.
 */
export async function runAgent(settings: AgentSettings): Promise<void> {
  let retryMs = FIRST_RETRY_MS
  for (;;) {
    const outcome = await serveOneRun(settings).catch((error: Error) => error)
    if (outcome instanceof Error) console.error(`agent: ${outcome.message}`)
    if (settings.once) {
      if (outcome instanceof Error) throw outcome
      return
    }
    // Waiting for a coordinator that is not up: back off, so an idle fleet does not flood its logs.
    retryMs = outcome instanceof Error ? Math.min(retryMs * 2, LONGEST_RETRY_MS) : FIRST_RETRY_MS
    await new Promise((resolve) => setTimeout(resolve, retryMs))
  }
}

function serveOneRun(settings: AgentSettings): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(settings.coordinatorUrl, {
      perMessageDeflate: false,
      // An address that drops packets would otherwise hold an agent task (billed) for minutes.
      handshakeTimeout: 15_000,
      headers: { authorization: `Bearer ${settings.joinToken}` },
    })
    const send = (message: AgentMessage) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message))
    }
    let running = false
    let finished = false
    socket.on('open', () => send({ type: 'hello', agent: settings.name }))
    socket.on('unexpected-response', (_request, response) => {
      const refused = response.statusCode === 401 ? ': it refused the join token' : ''
      reject(new Error(`coordinator ${settings.coordinatorUrl} answered ${response.statusCode}${refused}`))
      socket.terminate()
    })
    socket.on('error', (error) =>
      reject(new Error(`coordinator ${settings.coordinatorUrl}: ${error.message}`)),
    )
    socket.on('close', () => {
      if (!running) return reject(new Error('the coordinator closed the connection'))
      if (finished) return
      // The coordinator is gone mid-run (killed, out of memory, its machine asleep): nobody measures
      // this load any more, so stop loading the servers at once rather than at the planned end.
      console.error(`agent ${settings.name}: the coordinator left mid-run; stopping`)
      process.exit(1)
    })
    socket.on('message', async (data) => {
      const message = parseMessage<CoordinatorMessage>(data.toString())
      if (message?.type !== 'run' || running) return
      running = true
      console.error(`agent ${settings.name}: ${message.plan.rooms.length} rooms`)
      try {
        const summary = await runWorker(message.plan, (report) => send({ type: 'interval', report }))
        finished = true
        send({ type: 'done', summary })
        socket.close(CloseCode.Normal)
        resolve()
      } catch (error) {
        finished = true
        send({ type: 'failed', error: (error as Error).message })
        socket.close(CloseCode.InternalError)
        reject(error)
      }
    })
  })
}

export const defaultAgentName = () => `${hostname()}-${process.pid}`
