import assert from 'node:assert/strict'
import { after, afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { type RoundRobinProxy, startRoundRobinProxy } from '@symphony/dev-scripts/round-robin-proxy'
import { freePort } from '@symphony/dev-scripts/services'
import * as Y from 'yjs'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { type ClusterServer, metricValue, useTestCluster } from './helpers/cluster.js'
import { converged, EditingClient, holdsAllEdits, keepEditing } from './helpers/editing-clients.js'
import { closed, openRaw } from './helpers/raw-socket.js'
import { seededRandom } from './helpers/seeded-random.js'
import { requireTestServices } from './helpers/services.js'
import { TcpLink } from './helpers/tcp-link.js'

const until = (check: () => boolean | Promise<boolean>, message: string, timeoutMs = 20_000) =>
  eventually(check, message, timeoutMs)
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const isRunning = (server: ClusterServer) =>
  server.child.exitCode === null && server.child.signalCode === null

/**
 * Fault injection on a real local cluster: server processes, their own Redis, DynamoDB and S3
 * in moto, real y-websocket clients, and a round-robin proxy standing in for the load balancer.
 */
describe('faults on a real local cluster', () => {
  const cluster = useTestCluster()
  const proxies: RoundRobinProxy[] = []
  const links: TcpLink[] = []
  afterEach(() => {
    destroyClients()
  })
  after(async () => {
    for (const link of links) link.close()
    await Promise.all(proxies.map((proxy) => proxy.close()))
  })

  /** `count` servers on fixed ports (so a restart comes back where the proxy expects it). */
  async function serversBehindProxy(name: string, count: number, env: Record<string, string> = {}) {
    const ports = await Promise.all(Array.from({ length: count }, () => freePort()))
    const servers = await Promise.all(
      ports.map((port, i) => cluster.start(`${name}-${i}`, { PORT: String(port), ...env })),
    )
    const proxy = await startRoundRobinProxy({
      port: 0,
      targets: ports.map((port) => ({ host: '127.0.0.1', port })),
    })
    proxies.push(proxy)
    return { servers, ports, wsUrl: `ws://127.0.0.1:${proxy.port}` }
  }

  async function finish(clients: EditingClient[], room: string) {
    await until(() => converged(clients), 'every client holds every edit')
    for (const client of clients) client.destroy()
    await until(async () => holdsAllEdits(await cluster.snapshot(room), clients), 'S3 holds every edit')
  }

  it('SIGKILL of a server mid-edit: its clients are back within 5 s, and every edit sent is everywhere and in S3', async () => {
    const { servers, wsUrl } = await serversBehindProxy('kill', 3)
    const room = uniqueRoom('kill')
    const clients = Array.from({ length: 6 }, (_, i) => new EditingClient(wsUrl, room, i))
    await until(() => clients.every((client) => client.connected), 'everyone is connected')
    const stopEditing = keepEditing(clients, 20)
    await until(() => clients.every((client) => client.sent >= 10), 'editing is under way')
    const victim = servers[0] as ClusterServer
    victim.child.kill('SIGKILL')
    const killedAt = performance.now()
    await victim.exited
    await until(() => clients.some((c) => c.disconnectedAt.some((t) => t >= killedAt)), 'its clients drop')
    const dropped = clients.filter((c) => c.disconnectedAt.some((t) => t >= killedAt))
    await until(() => dropped.every((c) => c.connected), 'they are back')
    for (const client of dropped) {
      const back = (client.connectedAt.find((t) => t > killedAt) ?? Number.POSITIVE_INFINITY) - killedAt
      assert.ok(back <= 5_000, `client ${client.index} reconnected after ${back.toFixed(0)} ms`)
    }
    await until(() => clients.every((client) => client.sent >= 40), 'editing goes on')
    stopEditing()
    await finish(clients, room)
  })

  it('rolling SIGTERM restart of every server under load: nothing lost, at most one reconnect per restart', async () => {
    const { servers, ports, wsUrl } = await serversBehindProxy('roll', 3)
    const room = uniqueRoom('roll')
    const clients = Array.from({ length: 6 }, (_, i) => new EditingClient(wsUrl, room, i))
    await until(() => clients.every((client) => client.connected), 'everyone is connected')
    const stopEditing = keepEditing(clients, 25)
    const windows: [number, number][] = []
    for (const [i, server] of servers.entries()) {
      const started = performance.now()
      server.child.kill('SIGTERM')
      assert.equal((await server.exited).code, 0, `${server.name} drained cleanly`)
      await cluster.start(`${server.name}-restarted`, { PORT: String(ports[i]) })
      await until(() => clients.every((client) => client.connected), 'everyone is back')
      windows.push([started, performance.now()])
    }
    stopEditing()
    for (const client of clients) {
      const reconnects = client.connectedAt.slice(1)
      assert.ok(
        reconnects.length <= windows.length,
        `client ${client.index}: ${reconnects.length} reconnects`,
      )
      for (const [from, to] of windows) {
        const inWindow = reconnects.filter((t) => t >= from && t <= to).length
        assert.ok(inWindow <= 1, `client ${client.index} reconnected ${inWindow} times in one restart`)
      }
    }
    await finish(clients, room)
  })

  it('S3 failing for a while: editing goes on, memory stays flat, and snapshots catch up', async () => {
    const s3 = await TcpLink.open(Number(new URL(requireTestServices().awsEndpoint).port))
    links.push(s3)
    const env = { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3.port}`, SNAPSHOT_INTERVAL_MS: '1000' }
    const a = await cluster.start('s3-a', env)
    const b = await cluster.start('s3-b', env)
    const room = uniqueRoom('s3-outage')
    const clients = [a, b, a, b].map((server, i) => new EditingClient(server.wsUrl, room, i))
    await until(() => clients.every((client) => client.connected), 'everyone is connected')
    const stopEditing = keepEditing(clients, 50)
    await until(async () => (await cluster.snapshot(room)) !== null, 'a first snapshot')
    const heaps = async () =>
      Promise.all([a, b].map(async (s) => metricValue(await s.metrics(), 'nodejs_heap_size_used_bytes')))
    const failures = async () =>
      Promise.all([a, b].map(async (s) => metricValue(await s.metrics(), 'symphony_snapshot_failures_total')))
    const failuresBefore = await failures()
    s3.cut()
    // Saves retry after 1, 2, 4, 8… s, so each server has failed four times (a save and three
    // retries) about 9 s in, and its next retry comes about 16 s in: an outage ending at 13 s
    // spans several retries, and S3 is back just before the next one.
    const cutAt = performance.now()
    const heapSamples: number[][] = []
    // Used heap is a sawtooth; what survives each collection (a sample lower than the one before)
    // is what the server holds. Should a server collect less often than usual (every 2–6 s), the
    // outage lasts until it has collected twice, so the judgement below always has two to compare.
    const collected = (i: number) =>
      heapSamples.flatMap((sample, n) => {
        const bytes = sample[i] ?? 0
        return n > 0 && bytes < (heapSamples[n - 1]?.[i] ?? 0) ? [bytes] : []
      })
    const collectedTwice = () => [0, 1].every((i) => collected(i).length >= 2)
    while (performance.now() < cutAt + 13_000 || (!collectedTwice() && performance.now() < cutAt + 60_000)) {
      heapSamples.push(await heaps())
      await pause(250)
    }
    const failed = (await failures()).map((n, i) => n - (failuresBefore[i] ?? 0))
    stopEditing()
    await until(() => converged(clients), 'edits kept flowing without S3')
    // One server owns the room and saves it; the other relays its clients.
    assert.ok(Math.max(...failed) >= 4, `the owner: ${failed.join(' and ')} failed saves`)
    assert.ok((await cluster.redisKeys(`*journal:{${room}}*`)).length > 0, 'the journal holds what S3 lacks')
    // What survives collections may not climb during the outage.
    for (const [i, server] of [a, b].entries()) {
      const survivors = collected(i)
      assert.ok(survivors.length >= 2, `${server.name}: ${survivors.length} collections seen`)
      const growth = ((survivors.at(-1) ?? 0) - (survivors[0] ?? 0)) / 2 ** 20
      assert.ok(growth < 8, `${server.name}: heap after collections grew by ${growth.toFixed(1)} MiB`)
    }
    s3.restore()
    await until(
      async () => holdsAllEdits(await cluster.snapshot(room), clients),
      'snapshots catch up',
      60_000,
    )
    await until(
      async () => (await cluster.redisKeys(`*journal:{${room}}*`)).length === 0,
      'the journal is trimmed',
      60_000,
    )
    for (const client of clients) client.destroy()
  })

  it('DynamoDB unreachable: rooms owned before serve on through the relay, new ones wait (1013), nobody crashes', async () => {
    const dynamo = await TcpLink.open(Number(new URL(requireTestServices().awsEndpoint).port))
    links.push(dynamo)
    const env = {
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${dynamo.port}`,
      JOIN_WAIT_MS: '2000',
      REGISTRY_WAIT_MS: '500',
    }
    const a = await cluster.start('ddb-a', env)
    const b = await cluster.start('ddb-b', env)
    const room = uniqueRoom('ddb-outage')
    const saved = new Y.Doc()
    saved.getText('t').insert(0, 'from S3')
    await cluster.putSnapshot(room, Y.encodeStateAsUpdate(saved))
    const onA = await connectSynced(a.wsUrl, room)
    const onB = await connectSynced(b.wsUrl, room) // relayed to a, which owns the room
    assert.equal(onB.doc.getText('t').toString(), 'from S3')
    dynamo.cut()
    onA.doc.getText('t').insert(0, 'A+')
    onB.doc.getText('t').insert(7, '+B')
    await until(
      () =>
        onA.doc.getText('t').toString() === onB.doc.getText('t').toString() &&
        onA.doc.getText('t').length === 11,
      'edits meet through the relay',
    )
    // A room no one owns yet cannot be claimed: its clients wait, then are told to retry.
    for (const server of [a, b]) {
      const waiting = await openRaw(`${server.wsUrl}/${uniqueRoom('ddb-unowned')}`)
      assert.equal((await closed(waiting)).code, CloseCode.TryAgainLater)
    }
    onA.destroy()
    onB.destroy()
    await until(
      async () => (await cluster.snapshotDoc(room)).getText('t').length === 11,
      'the last leave saves to S3',
    )
    for (const server of [a, b]) {
      assert.ok(isRunning(server), `${server.name} is alive`)
      assert.equal((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status, 200)
    }
    dynamo.restore()
  })

  it('seeded random edits, disconnects and server kills converge (SYMPHONY_FAULT_SEED replays one)', async (t) => {
    const { seed, random, replayable } = seededRandom('SYMPHONY_FAULT_SEED')
    t.diagnostic(`seed ${seed}`)
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
    const { servers, ports, wsUrl } = await serversBehindProxy('fuzz', 3)
    const room = uniqueRoom('fuzz')
    const clients = Array.from({ length: 5 }, (_, i) => new EditingClient(wsUrl, room, i))
    let generation = 0
    const restart = async (i: number) => {
      servers[i] = await cluster.start(`fuzz-${i}-${++generation}`, { PORT: String(ports[i]) })
    }
    try {
      await until(() => clients.every((client) => client.connected), 'everyone is connected')
      for (let step = 0; step < 60; step++) {
        const roll = random()
        const client = pick(clients)
        if (roll < 0.6) {
          for (let n = 1 + Math.floor(random() * 5); n > 0; n--) client.edit()
          const shared = client.client.doc.getText('shared')
          shared.insert(Math.floor(random() * (shared.length + 1)), String.fromCharCode(97 + client.index))
        } else if (roll < 0.8) {
          if (client.client.provider.shouldConnect) client.client.provider.disconnect()
          else client.client.provider.connect()
        } else if (roll < 0.9) {
          const running = servers.filter(isRunning)
          if (running.length > 1) {
            const victim = pick(running)
            victim.child.kill('SIGKILL')
            await victim.exited
          }
        } else {
          const dead = servers.findIndex((server) => !isRunning(server))
          if (dead >= 0) await restart(dead)
        }
        await pause(20 + Math.floor(random() * 100))
      }
      await Promise.all(servers.map((server, i) => (isRunning(server) ? undefined : restart(i))))
      for (const client of clients)
        if (!client.client.provider.shouldConnect) client.client.provider.connect()
      await until(() => converged(clients), 'every client holds every edit', 30_000)
      const texts = new Set(clients.map((client) => client.client.doc.getText('shared').toString()))
      assert.equal(texts.size, 1, 'one shared text everywhere')
      await finish(clients, room)
    } catch (error) {
      throw replayable(error, 'server/test/faults.test.ts')
    }
  })
})
