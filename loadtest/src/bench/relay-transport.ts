/**
 * `npm run bench:relay-transport`: the two ways issue 48 named for the frames between an edge and a
 * room's owner, measured side by side. The relay's direct link: one WebSocket from the edge to the
 * owner's internal port (`server/src/transport/relay-links.ts`). Redis pub/sub: the edge publishes
 * on the owner's inbox channel and the owner publishes its answers on the edge's (as a fan-out over
 * the room's channel would carry them back). The owner (`relay-transport-owner.ts`) and Redis run
 * pinned to CPU 0, as the server and its Redis do in `npm run bench`; this process is the edge, on
 * CPU 1. It sends frames of a relay message's shape (a kind byte, a session number, the frame) at a
 * steady rate and times each one's way to the owner and back; each frame the owner gets, it sends
 * back once, as an owner sends a room's update to each edge once. Rounds alternate the transports.
 *
 * Both sides of each transport write a turn's messages at once (the link corked until the turn
 * ends, ioredis pipelining its commands), as the server does. The bytes framed are the same for
 * both, so the relay's own encoding is left out: what differs is the path and who pays for it.
 */
import { type ChildProcess, fork } from 'node:child_process'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { startRedis } from '@symphony/dev-scripts/services'
import { Redis } from 'ioredis'
import { WebSocket } from 'ws'
import { newHistogram, recordMs, summarize } from '../measurement/histogram.js'
import { median } from '../measurement/median.js'
import { serverStatsSource } from '../measurement/server-stats.js'
import { cpuPinning, pin } from './servers.js'

const { values } = parseArgs({
  options: {
    /** Frames per second from the edge to the owner (each comes back once). */
    rate: { type: 'string', default: '4000' },
    /** The frame's bytes (a typing update is about 30, a presence state 100–300). */
    'frame-bytes': { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
})
const rate = Number(values.rate)
const frameBytes = Number(values['frame-bytes'])
const seconds = Number(values.seconds)
const rounds = Number(values.rounds)
/** Sends are spread over ticks of this length, as clients' frames reach an edge in bursts. */
const TICK_MS = 5
const FRAME_KIND = 1
const OWNER_INBOX = 'bench:inbox:owner'
const EDGE_INBOX = 'bench:inbox:edge'
/** The kind byte, the session number (u32), then the frame, whose first 8 bytes hold its send time. */
const HEADER_BYTES = 5

interface Transport {
  name: string
  send(message: Buffer): void
  /** The edge's end of a turn: what it sent goes in one write. */
  turn(): void
  onAnswer(listener: (message: Buffer) => void): void
  close(): Promise<void>
}

interface RoundResult {
  transport: string
  sent: number
  answered: number
  p50: number
  p99: number
  /** CPU microseconds per frame (there and back) of the owner's process, of Redis, and of this edge. */
  ownerUs: number
  redisUs: number
  edgeUs: number
}

const pinning = cpuPinning()
if (pinning) pin(process.pid, pinning.generator)
const redis = await startRedis()
const owner = fork(
  new URL('./relay-transport-owner.js', import.meta.url),
  [redis.url, OWNER_INBOX, EDGE_INBOX],
  {
    stdio: 'inherit',
  },
)
try {
  const ownerPort = await new Promise<number>((resolve, reject) => {
    owner.once('message', (message: { port: number }) => resolve(message.port))
    owner.once('exit', (code) => reject(new Error(`the owner exited with code ${code}`)))
  })
  if (pinning) for (const pid of [redis.pid, owner.pid ?? 0]) pin(pid, pinning.server)
  console.log(
    `relay transport: ${rate} frames/s of ${frameBytes} bytes from the edge, each back once, ${seconds} s a round, ${rounds} rounds each`,
  )
  const results: RoundResult[] = []
  for (let round = 0; round < rounds; round++) {
    // Alternated, and reversed every other round, so neither always runs on a warmer machine.
    const order = round % 2 === 0 ? [linkTransport, inboxTransport] : [inboxTransport, linkTransport]
    for (const open of order) {
      const result = await measure(await open(ownerPort, redis.url), owner, redis.pid)
      results.push(result)
      console.log(
        `  round ${round + 1} ${result.transport}: round trip p50 ${result.p50.toFixed(3)} ms, p99 ${result.p99.toFixed(3)} ms; ` +
          `CPU per frame: owner ${result.ownerUs.toFixed(1)} µs, Redis ${result.redisUs.toFixed(1)} µs, edge ${result.edgeUs.toFixed(1)} µs; ` +
          `${result.answered} of ${result.sent} answered`,
      )
    }
  }
  report(results)
} finally {
  owner.disconnect()
  await redis.stop()
}

async function linkTransport(ownerPort: number): Promise<Transport> {
  const link = new WebSocket(`ws://127.0.0.1:${ownerPort}/`, { perMessageDeflate: false })
  await new Promise((resolve, reject) => link.once('open', resolve).once('error', reject))
  const socket = (link as unknown as { _socket: Socket })._socket
  socket.cork()
  return {
    name: 'direct link (WebSocket)',
    send: (message) => link.send(message),
    turn: () => {
      socket.uncork()
      socket.cork()
    },
    onAnswer: (listener) => link.on('message', listener),
    close: async () => {
      link.close()
      await new Promise((resolve) => link.once('close', resolve))
    },
  }
}

async function inboxTransport(_ownerPort: number, redisUrl: string): Promise<Transport> {
  const publisher = new Redis(redisUrl, { enableAutoPipelining: true })
  const subscriber = new Redis(redisUrl)
  await subscriber.subscribe(EDGE_INBOX)
  return {
    name: 'Redis pub/sub (inbox channels)',
    send: (message) => void publisher.publish(OWNER_INBOX, message),
    turn: () => {},
    onAnswer: (listener) =>
      subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => listener(message)),
    close: async () => {
      await Promise.all([publisher.quit(), subscriber.quit()])
    },
  }
}

async function measure(
  transport: Transport,
  ownerProcess: ChildProcess,
  redisPid: number,
): Promise<RoundResult> {
  const histogram = newHistogram()
  let answered = 0
  transport.onAnswer((message) => {
    recordMs(histogram, performance.now() - message.readDoubleLE(HEADER_BYTES))
    answered++
  })
  const ownerStats = serverStatsSource([], [ownerProcess.pid ?? 0])
  const redisStats = serverStatsSource([], [redisPid])
  // A second of warm-up at the same rate, not counted.
  await sendFor(transport, 1)
  await sleep(200)
  const sentBefore = answered
  const [ownerBefore, redisBefore] = await Promise.all([ownerStats.read(), redisStats.read()])
  const edgeBefore = process.cpuUsage()
  const sent = await sendFor(transport, seconds, () => histogram.reset())
  await sleep(500) // the last answers
  const [ownerAfter, redisAfter] = await Promise.all([ownerStats.read(), redisStats.read()])
  const edge = process.cpuUsage(edgeBefore)
  await transport.close()
  const cpuUs = (before: typeof ownerBefore, after: typeof ownerBefore) =>
    before && after ? ((after.cpuSeconds - before.cpuSeconds) * 1e6) / sent : Number.NaN
  const { p50, p99 } = summarize(histogram)
  return {
    transport: transport.name,
    sent,
    answered: answered - sentBefore,
    p50,
    p99,
    ownerUs: cpuUs(ownerBefore, ownerAfter),
    redisUs: cpuUs(redisBefore, redisAfter),
    edgeUs: (edge.user + edge.system) / sent,
  }
}

/** Sends at `rate` for `duration` seconds, a tick's share at a time; resolves with the count sent. */
async function sendFor(transport: Transport, duration: number, onStart?: () => void): Promise<number> {
  onStart?.()
  const start = performance.now()
  let sent = 0
  let session = 0
  while (performance.now() - start < duration * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate)
    for (; sent < due; sent++) {
      const message = Buffer.alloc(HEADER_BYTES + Math.max(8, frameBytes))
      message[0] = FRAME_KIND
      message.writeUInt32LE(session++ % 250, 1)
      message.writeDoubleLE(performance.now(), HEADER_BYTES)
      transport.send(message)
    }
    transport.turn()
    await sleep(TICK_MS)
  }
  return sent
}

function report(results: RoundResult[]): void {
  const of = (name: string) => results.filter((result) => result.transport === name)
  const names = [...new Set(results.map((result) => result.transport))]
  const medians = names.map((name) => {
    const rows = of(name)
    const pick = (key: 'p50' | 'p99' | 'ownerUs' | 'redisUs' | 'edgeUs') =>
      median(rows.map((row) => row[key])) ?? Number.NaN
    return {
      name,
      p50: pick('p50'),
      p99: pick('p99'),
      ownerUs: pick('ownerUs'),
      redisUs: pick('redisUs'),
      edgeUs: pick('edgeUs'),
    }
  })
  console.log('\nmedians over the rounds:')
  for (const m of medians)
    console.log(
      `  ${m.name}: round trip p50 ${m.p50.toFixed(3)} ms, p99 ${m.p99.toFixed(3)} ms; CPU per frame on the owner's core ${(m.ownerUs + m.redisUs).toFixed(1)} µs (owner ${m.ownerUs.toFixed(1)}, Redis ${m.redisUs.toFixed(1)}), at the edge ${m.edgeUs.toFixed(1)} µs (this process, its sending included)`,
    )
  const [link, inbox] = medians
  if (link && inbox)
    console.log(
      `pub/sub ÷ link: round trip p50 ${(inbox.p50 / link.p50).toFixed(2)}, p99 ${(inbox.p99 / link.p99).toFixed(2)}; CPU per frame on the owner's core ${((inbox.ownerUs + inbox.redisUs) / (link.ownerUs + link.redisUs)).toFixed(2)}, at the edge ${(inbox.edgeUs / link.edgeUs).toFixed(2)}`,
    )
}
