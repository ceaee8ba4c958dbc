import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import * as Y from 'yjs'
import {
  connectClient,
  connectSynced,
  destroyClients,
  eventually,
  firstCloseCode,
  uniqueRoom,
} from './helpers/clients.js'
import {
  CLUSTER_API_SECRET,
  type ClusterServer,
  metricValue,
  REGISTRY_LEASE_MS,
  roomApi,
  useTestCluster,
} from './helpers/cluster.js'
import { TcpLink } from './helpers/tcp-link.js'

/** Cluster conditions (S3, registry, metrics) get longer than the default to come true. */
const until = (check: () => Promise<boolean>, message: string, timeoutMs = 15_000) =>
  eventually(check, message, timeoutMs)

/** Every server its own copy of each room (RELAY=0), the shape some cases here are about (issue #48 removes it). */
const COPIES = { RELAY: '0' }

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

  it('loads a room held by another server from that server, not from S3', async () => {
    const a = await cluster.start('c2-a', COPIES)
    const b = await cluster.start('c2-b', COPIES)
    const room = uniqueRoom('peer')
    const writer = await connectSynced(a.wsUrl, room)
    writer.doc.getText('t').insert(0, 'held by A')
    await until(
      async () => metricValue(await a.metrics(), 'symphony_messages_received_total') >= 3,
      'A has it',
    )
    assert.equal(await cluster.snapshot(room), null, 'nothing in S3 yet')
    const reader = await connectSynced(b.wsUrl, room)
    assert.equal(reader.doc.getText('t').toString(), 'held by A')
    const metrics = await b.metrics()
    assert.equal(metricValue(metrics, 'symphony_room_loads_total{source="peer"}'), 1)
    assert.equal(metricValue(metrics, 'symphony_room_loads_total{source="snapshot"}'), 0, 'S3 was not read')
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
  })

  it('after the last user leaves: the snapshot is in S3 and the registry item is gone', async () => {
    const a = await cluster.start('c3-a')
    const room = uniqueRoom('leave')
    const writer = await connectSynced(a.wsUrl, room)
    writer.doc.getText('t').insert(0, 'saved on leave')
    await until(async () => (await cluster.registryItems(room)).length === 1, 'registered')
    writer.destroy()
    await until(
      async () => (await cluster.snapshotDoc(room)).getText('t').toString() === 'saved on leave',
      'the snapshot is in S3',
    )
    await until(async () => (await cluster.registryItems(room)).length === 0, 'the registry item is deleted')
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
      await until(
        async () => (await cluster.registryItems(room)).every((item) => item.expiresAtMs < Date.now()),
        'A’s lease has expired',
        REGISTRY_LEASE_MS * 3,
      )
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
    await until(
      async () => (await cluster.registryItems(room)).every((item) => item.expiresAtMs < Date.now()),
      'A’s lease has expired',
      REGISTRY_LEASE_MS * 3,
    )
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

  it('a server cut off from Redis misses messages, then heals through anti-entropy', async () => {
    const link = await TcpLink.open(cluster.redis.port)
    const a = await cluster.start('c5-a', COPIES)
    const b = await cluster.start('c5-b', { ...COPIES, PUBSUB: `redis://127.0.0.1:${link.port}` })
    try {
      const room = uniqueRoom('partition')
      const atA = await connectSynced(a.wsUrl, room)
      const atB = await connectSynced(b.wsUrl, room)
      atA.doc.getText('t').insert(0, 'before ')
      await eventually(() => atB.doc.getText('t').toString() === 'before ', 'normal fan-out', 10_000)
      link.cut()
      atA.doc.getText('t').insert(7, 'during')
      atA.doc.getText('t').delete(0, 1)
      await until(
        async () => metricValue(await a.metrics(), 'symphony_messages_received_total') >= 6,
        'A applied both',
      )
      link.restore()
      await eventually(() => atB.doc.getText('t').toString() === 'efore during', 'B healed', 20_000)
      assert.equal(atA.doc.getText('t').toString(), atB.doc.getText('t').toString())
    } finally {
      link.close()
      a.child.kill('SIGKILL')
      b.child.kill('SIGKILL')
    }
  })

  it('a server whose Redis connections hang half-open finds them dead by heartbeat, shows it, and heals', async () => {
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
      // Both of B's connections (pub/sub and journal) stay open and silent, for good.
      link.blackhole()
      await until(async () => {
        const { pubsub, journal } = await dependencies()
        return pubsub?.ok === false && journal?.ok === false
      }, "B's /healthz shows pub/sub and the journal down")
      const text = await b.metrics()
      assert.ok(metricValue(text, 'symphony_dependency_heartbeats_missed_total{dependency="pubsub"}') > 0)
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

  /**
   * `b` holds a stored room idle (nothing for it to save, so no save of b's meets a tombstone);
   * `missDeletion` makes it miss the deletion's notice, then `deleteRoom` deletes it through `a`
   * (204). `b` must close its client with RoomDeleted, and serve the next incarnation, empty.
   */
  async function idleHolderFindsDeletion(
    [a, b]: ClusterServer[],
    options: { missDeletion(room: string): Promise<void>; afterDelete?(): void },
  ) {
    assert.ok(a && b)
    const room = await cluster.storedRoom('missed-deletion', 'deleted content')
    const atB = await connectSynced(b.wsUrl, room)
    assert.equal(atB.doc.getText('t').toString(), 'deleted content')
    const closedAtB = firstCloseCode(atB)
    await options.missDeletion(room)
    assert.equal((await roomApi(a, room, '', { method: 'DELETE' })).status, 204)
    options.afterDelete?.()
    await until(async () => closedAtB() !== null, 'b finds the deletion it missed')
    assert.equal(closedAtB(), CloseCode.RoomDeleted)
    const fresh = await connectSynced(b.wsUrl, room)
    assert.equal(fresh.doc.getText('t').toString(), '', 'the next incarnation, empty')
  }

  it('a server cut off from Redis while a room it holds idle is deleted elsewhere drops it once its link is back', async () => {
    const link = await TcpLink.open(cluster.redis.port)
    const env = { API_SECRET: CLUSTER_API_SECRET }
    const a = await cluster.start('c5d-a', { ...env, ...COPIES })
    const b = await cluster.start('c5d-b', { ...env, ...COPIES, PUBSUB: `redis://127.0.0.1:${link.port}` })
    try {
      await idleHolderFindsDeletion([a, b], {
        missDeletion: async (room) => {
          await connectSynced(a.wsUrl, room)
          link.cut() // b's subscription is gone: the deletion notice never reaches it
        },
        afterDelete: () => link.restore(),
      })
    } finally {
      link.close()
      a.child.kill('SIGKILL')
      b.child.kill('SIGKILL')
    }
  })

  it('a deletion whose server died before telling anyone: the client retries it elsewhere, and the idle holder drops the room', async () => {
    const env = { API_SECRET: CLUSTER_API_SECRET }
    const a = await cluster.start('c5p-a', { ...env, ...COPIES })
    const b = await cluster.start('c5p-b', { ...env, ...COPIES })
    try {
      await idleHolderFindsDeletion([a, b], {
        // What a deleting server does first; it was killed before its notice and its answer, and
        // its caller retries the deletion through `a`.
        missDeletion: (room) => cluster.tombstone(room, 0),
      })
    } finally {
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
