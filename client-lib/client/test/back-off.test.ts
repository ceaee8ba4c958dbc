import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { eventually } from '@symphony/test-helpers/clients'
import WebSocket, { WebSocketServer } from 'ws'
import { CloseCode, ReconnectSchedule, Room } from '../src/index.js'
import { DEFAULT_MAX_PRESENCE_BYTES } from '../src/wire/presence-limits.js'

/** An empty sync step 2: the server has nothing the client lacks (the client is synced). */
const SYNCED = new Uint8Array([0, 1, 2, 0, 0])

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/**
 * A server that lets every client sync, then closes it with `code`: what a client the server keeps
 * closing for memory (4013) sees. Counts the connections it took.
 */
async function syncThenClose(code: number): Promise<{ url: string; connections: () => number }> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise((resolve) => server.once('listening', resolve))
  let connections = 0
  server.on('connection', (socket) => {
    connections++
    socket.once('message', () => {
      socket.send(SYNCED)
      socket.close(code, 'closed by the test')
    })
  })
  cleanups.push(() => server.close())
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections }
}

/** A room on `url` whose reconnect schedule the test reads; waits short, but longer each time. */
function enter(url: string): { room: Room; schedule: ReconnectSchedule } {
  const schedule = new ReconnectSchedule({ baseDelayMs: 1, maxDelayMs: 10_000 })
  const room = new Room({
    id: 'back-off',
    serverUrl: url,
    tokens: async () => null,
    schedule,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    fetch: (...args) => fetch(...args),
    connectTimeoutMs: 5_000,
    crossTab: false,
    offlineStoreName: null,
    maxPresenceBytes: DEFAULT_MAX_PRESENCE_BYTES,
  })
  cleanups.push(() => void room.close())
  return { room, schedule }
}

describe('reconnecting after the server closed a synced connection', () => {
  it(`keeps backing off while the server closes it for memory (${CloseCode.MemoryBudgetExceeded}), though each time it synced`, async () => {
    const server = await syncThenClose(CloseCode.MemoryBudgetExceeded)
    const { schedule } = enter(server.url)
    await eventually(() => server.connections() >= 5, 'five connections')
    // Each wait's ceiling doubles: the crowd the server shed spreads out instead of coming back.
    assert.ok(schedule.failures >= 4, `${schedule.failures} waits counted`)
  })

  it('starts over from short waits after an ordinary close of a synced connection', async () => {
    const server = await syncThenClose(CloseCode.GoingAway)
    const { schedule } = enter(server.url)
    await eventually(() => server.connections() >= 5, 'five connections')
    assert.ok(schedule.failures <= 1, `${schedule.failures} waits counted`)
  })
})
