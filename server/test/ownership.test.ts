import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue, REGISTRY_LEASE_MS, useTestCluster } from './helpers/cluster.js'
import { destroyNodeClients, nodeClient } from './helpers/node-client.js'
import { requireTestServices } from './helpers/services.js'
import { TcpLink } from './helpers/tcp-link.js'

/**
 * Issue #48: a room has one owner at a time, whose durable writes carry its epoch. An owner that
 * stalls past its lease wakes up with a later owner in its place: its writes are refused, so it
 * acknowledges nothing more and sends its clients on.
 */
describe('an owner stalled past its lease', () => {
  const cluster = useTestCluster()
  afterEach(() => destroyNodeClients())

  it('wakes up fenced: acknowledges nothing more, closes its clients, and their edits reach the new owner', async () => {
    const room = uniqueRoom('stale-owner')
    const [a, b] = await Promise.all([cluster.start('a'), cluster.start('b')])
    const writer = nodeClient(a.wsUrl).enter(room)
    await writer.whenSynced()
    writer.doc.getText('t').insert(0, 'first ')
    await eventually(() => writer.syncStatus === 'synchronized', 'acknowledged by its owner, a')
    assert.equal(metricValue(await a.metrics(), 'symphony_room_claims_total{outcome="owned"}'), 1)

    a.child.kill('SIGSTOP')
    try {
      // Past a's lease, b takes the room at the next epoch (a's peer fetch times out).
      await new Promise((resolve) => setTimeout(resolve, REGISTRY_LEASE_MS + 500))
      const reader = nodeClient(b.wsUrl).enter(room)
      await reader.whenSynced()
      assert.equal(reader.doc.getText('t').toString(), 'first ', 'what a acknowledged')
      assert.equal(metricValue(await b.metrics(), 'symphony_room_claims_total{outcome="owned"}'), 1)
    } finally {
      a.child.kill('SIGCONT')
    }

    // a's next write is refused: it acknowledges nothing, and closes its clients to come back.
    writer.doc.getText('t').insert(6, 'second')
    await eventually(
      async () => metricValue(await a.metrics(), 'symphony_fenced_writes_total') === 1,
      'a stopped serving the room',
    )
    const [onB] = await Promise.all([nodeClient(b.wsUrl).enter(room)])
    await eventually(() => onB.doc.getText('t').toString() === 'first second', 'the edit reached b', 10_000)
    await eventually(() => writer.syncStatus === 'synchronized', 'acknowledged once it reached a live copy')

    // Nothing acknowledged is lost: a cold start reads it back from the stores.
    for (const server of [a, b]) server.child.kill('SIGKILL')
    await Promise.all([a.exited, b.exited])
    const c = await cluster.start('c')
    const cold = nodeClient(c.wsUrl).enter(room)
    await cold.whenSynced()
    assert.equal(cold.doc.getText('t').toString(), 'first second')
  })

  it('wakes up with its lease run out: gives up a room another server took meanwhile, also one no one writes to', async () => {
    const room = uniqueRoom('idle-stale-owner')
    const [a, b] = await Promise.all([cluster.start('ia'), cluster.start('ib')])
    const idle = nodeClient(a.wsUrl).enter(room)
    await idle.whenSynced()
    idle.doc.getText('t').insert(0, 'before ')
    await eventually(() => idle.syncStatus === 'synchronized', 'acknowledged by its owner, a')
    a.child.kill('SIGSTOP')
    try {
      await new Promise((resolve) => setTimeout(resolve, REGISTRY_LEASE_MS + 500))
      const writer = nodeClient(b.wsUrl).enter(room)
      await writer.whenSynced()
      writer.doc.getText('t').insert(7, 'while a slept')
      await eventually(() => writer.syncStatus === 'synchronized', 'acknowledged by b, the new owner')
    } finally {
      a.child.kill('SIGCONT')
    }
    // The idle client never writes, so no fence tells a: its next lease renewal does.
    await eventually(
      () => idle.doc.getText('t').toString() === 'before while a slept',
      'the client on a reaches the room at b',
      REGISTRY_LEASE_MS * 3,
    )
    assert.equal(metricValue(await a.metrics(), 'symphony_rooms'), 0, 'a holds no copy')
  })

  it('with the relay: the edge serves the room itself once its owner is killed, losing nothing acknowledged', async (t) => {
    const room = uniqueRoom('killed-owner')
    const [a, b] = await Promise.all([cluster.start('ra'), cluster.start('rb')])
    const onA = nodeClient(a.wsUrl).enter(room)
    await onA.whenSynced()
    const relayed = nodeClient(b.wsUrl).enter(room)
    await relayed.whenSynced()
    relayed.doc.getText('t').insert(0, 'acknowledged ')
    await eventually(() => relayed.syncStatus === 'synchronized', 'acknowledged through the relay')
    assert.equal(metricValue(await b.metrics(), 'symphony_room_claims_total{outcome="owned"}'), 0, 'b relays')

    const killedAt = performance.now()
    a.child.kill('SIGKILL')
    await a.exited
    relayed.doc.getText('t').insert(13, 'after')
    await eventually(() => relayed.syncStatus === 'synchronized', 'acknowledged by b, its new owner', 10_000)
    t.diagnostic(`edited again ${Math.round(performance.now() - killedAt)} ms after its owner died`)
    assert.equal(metricValue(await b.metrics(), 'symphony_room_claims_total{outcome="owned"}'), 1)
    b.child.kill('SIGKILL')
    await b.exited
    const c = await cluster.start('rc')
    const cold = nodeClient(c.wsUrl).enter(room)
    await cold.whenSynced()
    assert.equal(cold.doc.getText('t').toString(), 'acknowledged after')
  })

  it('cut off from Redis and the registry, not from its clients: once its lease runs out it gives the room up, and its edits are acknowledged by the next owner', async () => {
    const room = uniqueRoom('cut-off-owner')
    const { awsEndpoint } = requireTestServices()
    const links = await Promise.all([
      TcpLink.open(cluster.redis.port),
      TcpLink.open(Number(new URL(awsEndpoint).port)),
    ])
    const [toRedis, toAws] = links
    try {
      const a = await cluster.start('xa', {
        PUBSUB: `redis://127.0.0.1:${toRedis.port}`,
        AWS_ENDPOINT_URL: `http://127.0.0.1:${toAws.port}`,
        REDIS_COMMAND_TIMEOUT_MS: '500',
      })
      const b = await cluster.start('xb')
      const onA = nodeClient(a.wsUrl).enter(room)
      await onA.whenSynced()
      const relayed = nodeClient(b.wsUrl).enter(room)
      await relayed.whenSynced()
      relayed.doc.getText('t').insert(0, 'before ')
      await eventually(() => relayed.syncStatus === 'synchronized', 'acknowledged by a, through the relay')

      for (const link of links) link.blackhole()
      relayed.doc.getText('t').insert(7, 'cut')
      // a can neither journal nor save it, nor renew its lease: it must not hold the room's users.
      await eventually(
        () => relayed.syncStatus === 'synchronized',
        'acknowledged by b while a stays cut off',
        REGISTRY_LEASE_MS * 5,
      )
      assert.equal(metricValue(await b.metrics(), 'symphony_room_claims_total{outcome="owned"}'), 1)
      for (const server of [a, b]) server.child.kill('SIGKILL')
      await Promise.all([a.exited, b.exited])
      const c = await cluster.start('xc')
      const cold = nodeClient(c.wsUrl).enter(room)
      await cold.whenSynced()
      assert.equal(cold.doc.getText('t').toString(), 'before cut')
    } finally {
      for (const link of links) link.close()
    }
  })
})
