/**
 * `npm run bench:crossing`: the CPU one message pays to cross servers, without the rest of a
 * server around it. Three `RedisPubSub`s (three servers' pub/sub) in this process share one Redis,
 * each subscribed to every room; messages are published round robin, a few per event-loop turn,
 * and each arrives at the two other servers (and back at its sender, which drops it). Prints, per
 * message published, this process's CPU (publish, receive, drop the echo) and Redis's, for each
 * `PUBSUB_FLUSH_MS` asked for. Both are pinned to CPU 0 when taskset is there, as in `npm run bench`.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { startRedis } from '@symphony/dev-scripts/services'
import { cpuPinning, pin } from './servers.js'

interface CrossingPubSub {
  subscribe(room: string, handler: (message: Uint8Array) => void): Promise<void>
  publish(room: string, message: Uint8Array): void
  close(): Promise<void>
}
type ServerPackage = {
  RedisPubSub: new (
    serverId: string,
    url: string,
    options: { channelPrefix: string; logger: unknown; flushMs: number },
  ) => CrossingPubSub
  silentLogger: unknown
}

const { values } = parseArgs({
  options: {
    flush: { type: 'string', default: '0,5' },
    messages: { type: 'string', default: '60000' },
    rooms: { type: 'string', default: '250' },
    'per-turn': { type: 'string', default: '1' },
    'frame-bytes': { type: 'string', default: '90' },
    repeat: { type: 'string', default: '3' },
  },
})
const messages = Number(values.messages)
const rooms = Number(values.rooms)
const perTurn = Number(values['per-turn'])
const frame = new Uint8Array(Number(values['frame-bytes'])).fill(7)
const { RedisPubSub, silentLogger } = (await import('@symphony/server' as string)) as ServerPackage

/** CPU seconds a process has used (user and system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks of 10 ms
}

async function round(redisUrl: string, redisPid: number, flushMs: number): Promise<[number, number]> {
  const channelPrefix = `crossing-${flushMs}-${Date.now()}:`
  // Server ids as long as a hostname-pid one: every message carries its sender's.
  const servers = ['a', 'b', 'c'].map(
    (id) =>
      new RedisPubSub(`bench-host-${id}-10001`, redisUrl, { channelPrefix, logger: silentLogger, flushMs }),
  )
  let received = 0
  for (const server of servers)
    for (let room = 0; room < rooms; room++) await server.subscribe(`room${room}`, () => received++)
  // As a server that loads a room publishes its digest: each hears the others, so none thinks
  // it holds a room alone (the first to subscribe would, and publish nothing to it).
  for (const server of servers) for (let room = 0; room < rooms; room++) server.publish(`room${room}`, frame)
  await delivered(() => received, 2 * 3 * rooms, false)
  received = 0
  const redisBefore = cpuSeconds(redisPid)
  const before = process.cpuUsage()
  let sent = 0
  await new Promise<void>((resolve) => {
    const turn = () => {
      for (let i = 0; i < perTurn && sent < messages; i++, sent++)
        servers[sent % 3]?.publish(`room${sent % rooms}`, frame)
      if (sent < messages) setImmediate(turn)
      else resolve()
    }
    turn()
  })
  await delivered(() => received, 2 * messages) // every message reaches the two other servers
  const used = process.cpuUsage(before)
  const redis = cpuSeconds(redisPid) - redisBefore
  await Promise.all(servers.map((server) => server.close()))
  return [(used.user + used.system) / messages, (redis * 1e6) / messages]
}

/** Waits for `expected` deliveries, or until none arrives for a second (then says how many are missing). */
async function delivered(received: () => number, expected: number, report = true): Promise<void> {
  for (let last = -1, idle = 0; received() < expected && idle < 1000; ) {
    idle = received() === last ? idle + 1 : 0
    last = received()
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  if (report && received() < expected)
    console.log(`  ${expected - received()} of ${expected} deliveries missing`)
}

const pinning = cpuPinning()
const redis = await startRedis()
try {
  if (pinning) {
    pin(redis.pid, pinning.server)
    pin(process.pid, pinning.server)
  }
  console.log(
    `crossing: ${messages} messages of ${frame.length} bytes over ${rooms} rooms, ${perTurn} per turn, 3 servers${pinning ? ', pinned to CPU 0' : ''}`,
  )
  for (let r = 0; r < Number(values.repeat); r++) {
    for (const flushMs of String(values.flush).split(',').map(Number)) {
      const [node, inRedis] = await round(redis.url, redis.pid, flushMs)
      console.log(
        `PUBSUB_FLUSH_MS=${flushMs}: servers ${node.toFixed(1)} us + Redis ${inRedis.toFixed(1)} us = ${(node + inRedis).toFixed(1)} us of CPU per message crossing to 2 servers`,
      )
    }
  }
} finally {
  await redis.stop()
}
