import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type WebSocket, WebSocketServer } from 'ws'
import { type AgentMessage, type CoordinatorMessage, parseMessage } from './agent-protocol.js'
import type { Collector } from './collector.js'
import { measuredRun, workerPlan } from './local-run.js'
import { planRooms, type RunSettings } from './options.js'
import type { Report } from './report-schema.js'
import type { WorkerSummary } from './worker.js'

export interface CoordinatorSettings {
  agents: number
  host: string
  port: number
  /** Told where the coordinator listens (the port may have been 0). */
  onListening?: (url: string) => void
}

/**
 * Waits for `agents` agents, hands each a share of whole rooms (a room's senders and observer must
 * share a clock), merges their per-second histograms, and reports as a local run would.
 */
export async function runCoordinator(
  settings: RunSettings,
  coordinator: CoordinatorSettings,
): Promise<Report> {
  const http = createServer((_request, response) =>
    response.writeHead(426).end('agents connect over WebSocket\n'),
  )
  const server = new WebSocketServer({ server: http, maxPayload: 64 * 2 ** 20 })
  await new Promise<void>((resolve) => http.listen(coordinator.port, coordinator.host, resolve))
  const { port } = http.address() as AddressInfo
  const url = `ws://${coordinator.host}:${port}`
  coordinator.onListening?.(url)
  console.error(`coordinator listening on ${url}; waiting for ${coordinator.agents} agent(s)`)
  try {
    const agents = await gatherAgents(server, coordinator.agents)
    return await runWith(settings, agents)
  } finally {
    for (const client of server.clients) client.close(1000)
    server.close()
    http.close()
  }
}

interface ConnectedAgent {
  name: string
  socket: WebSocket
}

function gatherAgents(server: WebSocketServer, wanted: number): Promise<ConnectedAgent[]> {
  const agents: ConnectedAgent[] = []
  return new Promise((resolve) => {
    server.on('connection', (socket) => {
      socket.once('message', (data) => {
        const message = parseMessage<AgentMessage>(data.toString())
        if (message?.type !== 'hello' || agents.length >= wanted) return socket.close(1008, 'not expected')
        // Two agents may share a host name: the coordinator's names are unique.
        const name = `${message.agent}#${agents.length + 1}`
        agents.push({ name, socket })
        console.error(`agent ${name} joined (${agents.length}/${wanted})`)
        if (agents.length === wanted) resolve(agents)
      })
    })
  })
}

function runWith(settings: RunSettings, agents: ConnectedAgent[]): Promise<Report> {
  const rooms = planRooms(settings)
  return measuredRun(settings, (collector) =>
    Promise.all(
      agents.map((agent, k) => {
        const share = rooms.filter((_, i) => i % agents.length === k)
        return drive(agent, { type: 'run', plan: workerPlan(settings, agent.name, share) }, collector)
      }),
    ),
  )
}

/** Sends an agent its rooms and feeds its reports to the collector until it is done. */
function drive(agent: ConnectedAgent, run: CoordinatorMessage, collector: Collector): Promise<WorkerSummary> {
  return new Promise((resolve, reject) => {
    agent.socket.on('message', (data) => {
      const message = parseMessage<AgentMessage>(data.toString())
      if (message?.type === 'interval') collector.add({ ...message.report, agent: agent.name })
      else if (message?.type === 'done') resolve({ ...message.summary, agent: agent.name })
      else if (message?.type === 'failed') reject(new Error(`agent ${agent.name} failed: ${message.error}`))
    })
    agent.socket.on('close', () => reject(new Error(`agent ${agent.name} left before finishing its rooms`)))
    agent.socket.send(JSON.stringify(run))
  })
}
