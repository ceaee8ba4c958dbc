import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { CloseCode } from '@symphony/client/wire'
import { type WebSocket, WebSocketServer } from 'ws'
import type { Collector } from '../measurement/collector.js'
import type { WorkerSummary } from '../measurement/worker-summary.js'
import { planRooms, type RunSettings } from '../options.js'
import type { Report } from '../reporting/report-schema.js'
import { type AgentMessage, type CoordinatorMessage, parseMessage } from './agent-protocol.js'
import { measuredRun, workerPlan } from './local-run.js'

export interface CoordinatorSettings {
  agents: number
  host: string
  port: number
  /** What an agent must present (`Authorization: Bearer <token>`) to be handed rooms. */
  joinToken: string
  /** Told where the coordinator listens (the port may have been 0). */
  onListening?: (url: string) => void
}

/** A fresh join token, for a coordinator given none. */
export const newJoinToken = () => randomBytes(24).toString('base64url')

export interface ConnectedAgent {
  name: string
  socket: WebSocket
}

/**
 * Hands a run's rooms to agents. Only an agent presenting the join token gets past the WebSocket
 * upgrade (401 before it otherwise); it receives its rooms with their users' tokens, never the
 * secret that signs them. The coordinator speaks plain ws://: put TLS in front of it (agents dial
 * wss:// then), or keep it where only the agents reach it, inside the VPC.
 */
export class Coordinator {
  readonly #http: Server
  readonly #sockets: WebSocketServer
  readonly #joined: ConnectedAgent[] = []
  #wanted = 0
  #onJoin: () => void = () => {}

  private constructor(
    readonly url: string,
    http: Server,
    sockets: WebSocketServer,
  ) {
    this.#http = http
    this.#sockets = sockets
    sockets.on('connection', (socket) => this.#greet(socket))
  }

  static async listen(settings: Omit<CoordinatorSettings, 'agents'>): Promise<Coordinator> {
    const expected = digest(settings.joinToken)
    const http = createServer((_request, response) =>
      response.writeHead(426).end('agents connect over WebSocket\n'),
    )
    const sockets = new WebSocketServer({ noServer: true, maxPayload: 64 * 2 ** 20 })
    http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const presented = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1]
      if (!presented || !timingSafeEqual(digest(presented), expected)) {
        console.error(
          `coordinator: refused a connection from ${request.socket.remoteAddress}: ${presented ? 'wrong' : 'no'} join token`,
        )
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
        return
      }
      sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws, request))
    })
    await new Promise<void>((resolve) => http.listen(settings.port, settings.host, resolve))
    const { port } = http.address() as AddressInfo
    const url = `ws://${settings.host}:${port}`
    settings.onListening?.(url)
    return new Coordinator(url, http, sockets)
  }

  /** Resolves once `wanted` agents have joined; later ones are turned away. */
  gather(wanted: number): Promise<ConnectedAgent[]> {
    this.#wanted = wanted
    return new Promise((resolve) => {
      this.#onJoin = () => {
        if (this.#joined.length >= wanted) resolve(this.#joined.slice(0, wanted))
      }
      this.#onJoin()
    })
  }

  get joined(): readonly ConnectedAgent[] {
    return this.#joined
  }

  /** Hands each agent a share of whole rooms (a room's senders and observer share a clock) and merges their reports. */
  run(settings: RunSettings, agents: ConnectedAgent[]): Promise<Report> {
    const rooms = planRooms(settings)
    return measuredRun(settings, (collector) =>
      Promise.all(
        agents.map(async (agent, k) => {
          const share = rooms.filter((_, i) => i % agents.length === k)
          const plan = await workerPlan(settings, agent.name, share)
          return drive(agent, { type: 'run', plan }, collector)
        }),
      ),
    )
  }

  close(): void {
    for (const client of this.#sockets.clients) client.close(CloseCode.Normal)
    this.#sockets.close()
    this.#http.close()
    this.#http.closeAllConnections()
  }

  #greet(socket: WebSocket): void {
    socket.once('message', (data) => {
      const message = parseMessage<AgentMessage>(data.toString())
      if (message?.type !== 'hello' || this.#joined.length >= this.#wanted) {
        socket.close(CloseCode.PolicyViolation, 'not expected')
        return
      }
      // Two agents may share a host name: the coordinator's names are unique.
      const name = `${message.agent}#${this.#joined.length + 1}`
      this.#joined.push({ name, socket })
      console.error(`agent ${name} joined (${this.#joined.length}/${this.#wanted})`)
      this.#onJoin()
    })
  }
}

/** Listens, waits for `agents` agents, runs, and reports as a local run would. */
export async function runCoordinator(
  settings: RunSettings,
  coordinator: CoordinatorSettings,
): Promise<Report> {
  const server = await Coordinator.listen(coordinator)
  console.error(`coordinator listening on ${server.url}; waiting for ${coordinator.agents} agent(s)`)
  try {
    const agents = await server.gather(coordinator.agents)
    return await server.run(settings, agents)
  } finally {
    server.close()
  }
}

/** Equal-length digests, so comparing them in constant time says nothing about the token's length. */
const digest = (token: string) => createHash('sha256').update(token).digest()

/** Sends an agent its rooms and feeds its reports to the collector until it is done. */
function drive(agent: ConnectedAgent, run: CoordinatorMessage, collector: Collector): Promise<WorkerSummary> {
  return new Promise((resolve, reject) => {
    agent.socket.on('message', (data) => {
      const message = parseMessage<AgentMessage>(data.toString())
      if (message?.type === 'interval') collector.add({ ...message.report, agent: agent.name })
      else if (message?.type === 'done') resolve({ ...message.summary, agent: agent.name })
      else if (message?.type === 'failed') reject(new Error(`agent ${agent.name} failed: ${message.error}`))
    })
    const left = () => reject(new Error(`agent ${agent.name} left before finishing its rooms`))
    agent.socket.on('close', left)
    // It may have left between joining and now: its 'close' has passed, and a send would vanish.
    if (agent.socket.readyState !== agent.socket.OPEN) return left()
    agent.socket.send(JSON.stringify(run), (error) => error && left())
  })
}
