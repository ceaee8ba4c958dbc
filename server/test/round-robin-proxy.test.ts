import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { type RoundRobinProxy, startRoundRobinProxy } from '@symphony/dev-scripts/round-robin-proxy'
import { freePort } from '@symphony/dev-scripts/services'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { startTestCluster, startTestServer } from './helpers/test-server.js'

const proxies = new Set<RoundRobinProxy>()

afterEach(async () => {
  await cleanUpAfterTest()
  await Promise.all([...proxies].map((proxy) => proxy.close()))
  proxies.clear()
})

/** Two sync servers of one cluster (one registry, stores and relay), with the proxy in front. */
async function twoServersBehindProxy() {
  const [a, b] = await startTestCluster()
  const proxy = await startRoundRobinProxy({
    port: 0,
    targets: [a, b].map((t) => ({ host: '127.0.0.1', port: t.server.port })),
  })
  proxies.add(proxy)
  return { a, b, proxy, wsUrl: `ws://127.0.0.1:${proxy.port}`, httpUrl: `http://127.0.0.1:${proxy.port}` }
}

describe('round-robin front proxy (npm run cluster)', () => {
  it('sends two WebSocket clients of one room to different servers, and their edits converge', async () => {
    const { a, b, wsUrl } = await twoServersBehindProxy()
    const room = uniqueRoom()
    const first = await connectSynced(wsUrl, room)
    const second = await connectSynced(wsUrl, room)
    // One server owns the room and holds both sessions: its own client's and the one the other relays.
    const held = [a, b].map((t) => t.server.manager.loadedRoom(room)?.connections.size ?? 0)
    assert.deepEqual(held.toSorted(), [0, 2], 'one copy of the room, with both clients')

    first.doc.getText('t').insert(0, 'across servers')
    await eventually(() => second.doc.getText('t').toString() === 'across servers', 'a → b')
    second.doc.getMap('m').set('k', 'back')
    await eventually(() => first.doc.getMap('m').get('k') === 'back', 'b → a')
  })

  it('takes plain HTTP requests in turn and names the server that answered', async () => {
    const { a, b, httpUrl } = await twoServersBehindProxy()
    const responses = [await fetch(`${httpUrl}/healthz`), await fetch(`${httpUrl}/healthz`)]
    const backends = responses.map((res) => res.headers.get('x-symphony-backend'))
    assert.deepEqual(backends.toSorted(), [String(a.server.port), String(b.server.port)].toSorted())
    const bodies = (await Promise.all(responses.map((res) => res.json()))) as { serverId: string }[]
    assert.deepEqual(bodies.map((body) => body.serverId).toSorted(), ['a', 'b'])
    for (const res of responses) assert.equal(res.status, 200)
  })

  it('skips a target that refuses the connection, and answers 502 when every one does', async () => {
    const live = await startTestServer()
    const closedPort = await freePort()
    const proxy = await startRoundRobinProxy({
      port: 0,
      targets: [
        { host: '127.0.0.1', port: closedPort },
        { host: '127.0.0.1', port: live.server.port },
      ],
    })
    proxies.add(proxy)
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`http://127.0.0.1:${proxy.port}/healthz`)
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('x-symphony-backend'), String(live.server.port))
    }
    const client = await connectSynced(`ws://127.0.0.1:${proxy.port}`, uniqueRoom())
    assert.equal(client.provider.wsconnected, true)

    const dead = await startRoundRobinProxy({ port: 0, targets: [{ host: '127.0.0.1', port: closedPort }] })
    proxies.add(dead)
    const res = await fetch(`http://127.0.0.1:${dead.port}/healthz`)
    assert.equal(res.status, 502)
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'bad_gateway')
  })
})
