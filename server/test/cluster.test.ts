import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { connectClient, connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue, REGISTRY_LEASE_MS, useTestCluster } from './helpers/cluster.js'
import { TcpLink } from './helpers/tcp-link.js'

/** Cluster conditions (S3, registry, metrics) get longer than the default to come true. */
const until = (check: () => Promise<boolean>, message: string, timeoutMs = 15_000) =>
  eventually(check, message, timeoutMs)

describe('a real local cluster: sync server processes, Redis, DynamoDB and S3 (moto)', () => {
  const cluster = useTestCluster()
  afterEach(destroyClients)

  it('clients on three servers in one room converge, updates and presence both', async () => {
    const servers = await Promise.all(['c1-a', 'c1-b', 'c1-c'].map((name) => cluster.start(name)))
    const room = uniqueRoom('three')
    const clients = await Promise.all(servers.map((server) => connectSynced(server.wsUrl, room)))
    clients.forEach((client, i) => {
      client.doc.getMap('m').set(`from-${i}`, i)
      client.provider.awareness.setLocalStateField('user', { name: `user-${i}` })
    })
    for (const client of clients) {
      await eventually(() => client.doc.getMap('m').size === 3, 'every update reaches every server', 10_000)
      await eventually(
        () => client.provider.awareness.getStates().size === 3,
        'everyone’s presence everywhere',
        10_000,
      )
    }
    const leaving = clients[0]
    assert.ok(leaving)
    const leavingId = leaving.doc.clientID
    leaving.destroy()
    for (const client of clients.slice(1)) {
      await eventually(
        () => !client.provider.awareness.getStates().has(leavingId),
        'presence removed on other servers',
      )
    }
    for (const server of servers) server.child.kill('SIGKILL')
  })

  it('after the last user leaves: the snapshot is in S3 and the room released', async () => {
    const a = await cluster.start('c3-a')
    const room = uniqueRoom('leave')
    const writer = await connectSynced(a.wsUrl, room)
    writer.doc.getText('t').insert(0, 'saved on leave')
    await until(async () => (await cluster.ownerItem(room))?.serverId === 'c3-a', 'owned')
    writer.destroy()
    await until(
      async () => (await cluster.snapshotDoc(room)).getText('t').toString() === 'saved on leave',
      'the snapshot is in S3',
    )
    await until(async () => (await cluster.ownerItem(room))?.released === true, 'released')
    a.child.kill('SIGKILL')
  })

  it('a server killed with SIGKILL: its room loads from S3 elsewhere, and its address gets no fetch once its lease ran out', async () => {
    const a = await cluster.start('c4-a', { SNAPSHOT_INTERVAL_MS: '300' })
    const b = await cluster.start('c4-b')
    const room = uniqueRoom('killed')
    const writer = await connectSynced(a.wsUrl, room)
    writer.doc.getText('t').insert(0, 'survives the crash')
    await until(
      async () => (await cluster.snapshotDoc(room)).getText('t').toString() === 'survives the crash',
      'periodic snapshot',
    )
    writer.provider.shouldConnect = false
    a.child.kill('SIGKILL')
    await a.exited
    // Stand in for A at its old internal address, counting any peer fetch that still comes.
    const [, port] = (a.internalAddress ?? '').split(':')
    let fetchesToDeadServer = 0
    const impostor = createServer((socket) => {
      fetchesToDeadServer++
      socket.destroy()
    })
    await new Promise<void>((resolve) => impostor.listen(Number(port), '127.0.0.1', resolve))
    try {
      await until(async () => cluster.leaseExpired('c4-a'), 'A’s lease has expired', REGISTRY_LEASE_MS * 3)
      const reader = await connectSynced(b.wsUrl, room)
      assert.equal(reader.doc.getText('t').toString(), 'survives the crash')
      assert.equal(metricValue(await b.metrics(), 'symphony_room_loads_total{source="snapshot"}'), 1)
      assert.equal(fetchesToDeadServer, 0, 'no peer fetch was sent to the dead server')
    } finally {
      impostor.close()
      b.child.kill('SIGKILL')
    }
  })

  it('a server killed with SIGKILL before any snapshot, after its clients left: another replays its journal from Redis', async () => {
    // A long grace: the room is still loaded, unsaved, when A dies.
    const a = await cluster.start('c9-a', { ROOM_GRACE_MS: '3600000' })
    const b = await cluster.start('c9-b')
    const room = uniqueRoom('journal')
    const [writer, witness] = await Promise.all([connectSynced(a.wsUrl, room), connectSynced(a.wsUrl, room)])
    for (let i = 0; i < 25; i++) writer.doc.getArray<number>('edits').push([i])
    await eventually(() => witness.doc.getArray('edits').length === 25, 'A applied every edit')
    writer.destroy()
    witness.destroy()
    a.child.kill('SIGKILL')
    await a.exited
    assert.equal(await cluster.snapshot(room), null, 'A saved no snapshot')
    await until(async () => cluster.leaseExpired('c9-a'), 'A’s lease has expired', REGISTRY_LEASE_MS * 3)
    const reader = await connectSynced(b.wsUrl, room)
    assert.deepEqual(
      reader.doc.getArray('edits').toArray(),
      Array.from({ length: 25 }, (_, i) => i),
    )
    assert.equal(metricValue(await b.metrics(), 'symphony_journal_replayed_updates_total'), 25)
    reader.destroy()
    await until(
      async () => (await cluster.snapshot(room)) !== null,
      'B saves the room when its last user leaves',
    )
    await until(
      async () => (await cluster.redisKeys(`*journal:{${room}}*`)).length === 0,
      'the journal in Redis is trimmed away',
    )
    b.child.kill('SIGKILL')
  })

  it('a server whose Redis connection hangs half-open finds it dead by heartbeat, shows it, and heals', async () => {
    const link = await TcpLink.open(cluster.redis.port)
    const a = await cluster.start('c5h-a')
    const b = await cluster.start('c5h-b', {
      PUBSUB: `redis://127.0.0.1:${link.port}`,
      REDIS_COMMAND_TIMEOUT_MS: '1000',
      REDIS_HEARTBEAT_INTERVAL_MS: '300',
      REDIS_HEARTBEAT_TIMEOUT_MS: '700',
    })
    const dependencies = async () =>
      (
        (await (await fetch(`http://127.0.0.1:${b.port}/healthz`)).json()) as {
          dependencies: Record<string, { ok: boolean }>
        }
      ).dependencies
    try {
      const room = uniqueRoom('half-open')
      const atA = await connectSynced(a.wsUrl, room)
      const atB = await connectSynced(b.wsUrl, room)
      atA.doc.getText('t').insert(0, 'before ')
      await eventually(() => atB.doc.getText('t').toString() === 'before ', 'normal fan-out', 10_000)
      // B's one Redis connection (the journal's) stays open and silent, for good.
      link.blackhole()
      await until(
        async () => (await dependencies()).journal?.ok === false,
        "B's /healthz shows the journal down",
      )
      const text = await b.metrics()
      assert.ok(metricValue(text, 'symphony_dependency_heartbeats_missed_total{dependency="journal"}') > 0)
      atA.doc.getText('t').insert(7, 'during')
      link.restore() // new connections get through; the hung ones never will
      await eventually(() => atB.doc.getText('t').toString() === 'before during', 'B hears A again', 20_000)
      atB.doc.getText('t').insert(0, '> ')
      await eventually(() => atA.doc.getText('t').toString() === '> before during', 'A hears B again', 20_000)
      await until(async () => Object.values(await dependencies()).every((d) => d.ok), 'B shows all up')
    } finally {
      link.close()
      a.child.kill('SIGKILL')
      b.child.kill('SIGKILL')
    }
  })

  it('Redis restarted mid-session: servers reconnect and later edits reach everyone', async () => {
    const a = await cluster.start('c6-a')
    const b = await cluster.start('c6-b')
    const room = uniqueRoom('redis-restart')
    const atA = await connectSynced(a.wsUrl, room)
    const atB = await connectSynced(b.wsUrl, room)
    atA.doc.getMap('m').set('before', true)
    await eventually(() => atB.doc.getMap('m').get('before') === true, 'before the restart', 10_000)
    await cluster.redis.restart()
    atA.doc.getMap('m').set('after-a', true)
    atB.doc.getMap('m').set('after-b', true)
    await eventually(() => atB.doc.getMap('m').get('after-a') === true, 'A’s later edit reaches B', 20_000)
    await eventually(() => atA.doc.getMap('m').get('after-b') === true, 'B’s later edit reaches A', 20_000)
    assert.deepEqual(atA.doc.getMap('m').toJSON(), atB.doc.getMap('m').toJSON())
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
  })

  it('two servers loading the same cold room at once end with one consistent document', async () => {
    const room = uniqueRoom('cold')
    const seed = new Y.Doc()
    seed.getText('t').insert(0, 'stored')
    await cluster.putSnapshot(room, Y.encodeStateAsUpdate(seed))
    const a = await cluster.start('c7-a')
    const b = await cluster.start('c7-b')
    const atA = connectClient(a.wsUrl, room)
    const atB = connectClient(b.wsUrl, room)
    atA.doc.getMap('m').set('a', 1) // edits made before either has synced
    atB.doc.getMap('m').set('b', 2)
    for (const client of [atA, atB]) {
      await eventually(
        () => client.doc.getText('t').toString() === 'stored' && client.doc.getMap('m').size === 2,
        'both see the stored text and both edits',
        15_000,
      )
    }
    atA.destroy()
    atB.destroy()
    await until(async () => {
      const doc = await cluster.snapshotDoc(room)
      return doc.getText('t').toString() === 'stored' && doc.getMap('m').size === 2
    }, 'the final snapshot holds everything')
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
  })
})
