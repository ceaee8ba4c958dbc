import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { referenceWorkMs, STALL_UNITS } from './helpers/bystander.js'
import { connectClient, destroyClients, eventually, type TestClient, uniqueRoom } from './helpers/clients.js'
import { metricValue } from './helpers/cluster.js'
import { startServerProcess } from './helpers/server-process.js'
import { TcpLink } from './helpers/tcp-link.js'

const CLIENTS = 3_000
const PER_ROOM = 10

describe('reconnect storm', () => {
  after(destroyClients)

  it(`${CLIENTS} clients dropped at once all resync, and the server's event loop keeps its pace`, async (t) => {
    // This process holds each client's socket and both ends of the relay: three descriptors each.
    const limit = Number(execFileSync('sh', ['-c', 'ulimit -n']).toString().trim())
    const needed = CLIENTS * 3 + 200
    t.diagnostic(`ulimit -n is ${limit}; this test needs about ${needed} file descriptors`)
    assert.ok(limit >= needed, `ulimit -n ${limit} is below the ${needed} this test needs: raise it`)
    const data = mkdtempSync(join(tmpdir(), 'symphony-storm-'))
    const server = await startServerProcess({
      AUTH: 'none',
      DATABASE_URL: 'none',
      SNAPSHOTS: `file://${join(data, 'snapshots')}`,
      JOURNAL: `file://${join(data, 'journal')}`,
      ROOM_GRACE_MS: '60000',
    })
    const link = await TcpLink.open(server.port)
    const metrics = async () => (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text()
    try {
      const wsUrl = `ws://127.0.0.1:${link.port}`
      const rooms = Array.from({ length: CLIENTS / PER_ROOM }, () => uniqueRoom('storm'))
      const clients: TestClient[] = []
      // Joined in waves: the first connection is not what this test measures.
      for (const room of rooms) {
        for (let i = 0; i < PER_ROOM; i++) clients.push(connectClient(wsUrl, room))
        if (clients.length % 500 === 0) {
          await eventually(() => clients.every((c) => c.provider.synced), 'the wave synced', 30_000)
        }
      }
      await eventually(() => clients.every((c) => c.provider.synced), 'everyone synced', 30_000)
      await metrics() // resets the server's event-loop delay histogram: the next read covers the storm
      link.cut()
      await eventually(() => clients.every((c) => !c.provider.wsconnected), 'everyone dropped', 10_000)
      // While they are away, the first client of each room edits offline: resync must carry it.
      for (const [r, room] of rooms.entries()) clients[r * PER_ROOM]?.doc.getMap('m').set(room, r)
      const droppedAt = performance.now()
      link.restore()
      await eventually(
        () =>
          rooms.every((room, r) =>
            clients
              .slice(r * PER_ROOM, (r + 1) * PER_ROOM)
              .every((c) => c.provider.synced && c.doc.getMap('m').get(room) === r),
          ),
        'every client is back and holds its room’s offline edit',
        30_000,
      ).catch(async (error: Error) => {
        const synced = clients.filter((c) => c.provider.synced).length
        const holding = clients.filter((c, i) =>
          c.doc.getMap('m').has(rooms[Math.floor(i / PER_ROOM)] ?? ''),
        ).length
        const connected = clients.filter((c) => c.provider.wsconnected).length
        const connecting = clients.filter((c) => c.provider.wsconnecting).length
        const refused = (await metrics())
          .split('\n')
          .filter((l) => /refused|closed_by_server|^symphony_connections /.test(l))
        throw new Error(
          `${error.message}: ${synced} synced, ${holding} hold the edit, ${connected} connected, ${connecting} connecting; ${refused.join('; ')}`,
        )
      })
      const resyncSeconds = (performance.now() - droppedAt) / 1000
      const text = await metrics()
      const lagP99 = metricValue(text, 'nodejs_eventloop_lag_p99_seconds') * 1000
      const rssMiB = metricValue(text, 'process_resident_memory_bytes') / 2 ** 20
      t.diagnostic(
        `resynced ${CLIENTS} clients in ${resyncSeconds.toFixed(1)} s; server lag p99 ${lagP99.toFixed(0)} ms; RSS ${rssMiB.toFixed(0)} MiB`,
      )
      const referenceMs = referenceWorkMs()
      assert.ok(
        lagP99 <= STALL_UNITS * referenceMs,
        `event-loop lag p99 ${lagP99.toFixed(0)} ms, over ${STALL_UNITS} × the ${referenceMs.toFixed(1)} ms reference work`,
      )
      assert.equal(metricValue(text, 'symphony_connections'), CLIENTS)
      assert.equal(server.child.exitCode, null, 'the server is alive (no out-of-memory)')
    } finally {
      destroyClients()
      link.close()
      server.child.kill('SIGKILL')
    }
  })
})
