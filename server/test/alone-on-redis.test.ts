import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { RedisPubSub } from '../src/adapters/redis-pubsub.js'
import { silentLogger } from '../src/logger.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { openRaw } from './helpers/raw-socket.js'
import { requireTestServices, uniqueName } from './helpers/services.js'
import { startTestServer } from './helpers/test-server.js'

const INTERNAL_TOKEN = 'test-internal-token-0123456789'
const internal = { port: 0, advertisedHost: '127.0.0.1', token: INTERNAL_TOKEN, fetchTimeoutMs: 1_000 }

afterEach(cleanUpAfterTest)

describe('a room one server holds alone on Redis', () => {
  it('is not published to until a server loading it announces itself; then every edit reaches it', async () => {
    const { redisUrl } = requireTestServices()
    const channelPrefix = `${uniqueName('alone')}:`
    const registryTable = new MemoryRegistryTable()
    const pubsubs = ['a', 'b'].map(
      (id) => new RedisPubSub(id, redisUrl, { channelPrefix, logger: silentLogger }),
    )
    const [atA, atB] = pubsubs as [RedisPubSub, RedisPubSub]
    const a = await startTestServer({
      serverId: 'a',
      registryTable,
      internal,
      relay: false,
      adapters: { pubsub: atA },
    })
    const b = await startTestServer({
      serverId: 'b',
      registryTable,
      internal,
      relay: false,
      adapters: { pubsub: atB },
    })
    const room = uniqueRoom()
    const writer = await connectSynced(a.wsUrl, room)
    const text = writer.doc.getText('t')
    text.insert(0, 'x')
    await eventually(() => !atA.mayHavePeers(room), 'A learnt from Redis that it holds the room alone')
    text.insert(1, 'y') // published to nobody
    // B loads the room from A (a peer) for a client that sends nothing at all, not even presence:
    // only B's digest after loading can tell A that someone else holds the room now.
    await openRaw(`${b.wsUrl}/${room}`)
    await eventually(() => atA.mayHavePeers(room), 'A heard B')
    text.insert(2, 'z')
    await eventually(
      () => b.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'xyz',
      "B's copy has every edit, those A published to nobody too",
    )
  })

  it("publishes again once a peer's subscriber reconnects, even if that peer sends nothing", async () => {
    const { redisUrl } = requireTestServices()
    const channelPrefix = `${uniqueName('alone')}:`
    const registryTable = new MemoryRegistryTable()
    const [atA, atB] = ['c', 'd'].map(
      (id) => new RedisPubSub(id, redisUrl, { channelPrefix, logger: silentLogger }),
    ) as [RedisPubSub, RedisPubSub]
    const a = await startTestServer({
      serverId: 'c',
      registryTable,
      internal,
      relay: false,
      adapters: { pubsub: atA },
    })
    const b = await startTestServer({
      serverId: 'd',
      registryTable,
      internal,
      relay: false,
      adapters: { pubsub: atB },
    })
    const room = uniqueRoom()
    const writer = await connectSynced(a.wsUrl, room)
    const reader = await connectSynced(b.wsUrl, room)
    writer.doc.getText('t').insert(0, 'x')
    await eventually(() => reader.doc.getText('t').toString() === 'x', 'B has the first edit')
    // B's subscriber is cut (a Redis restart or a network blip does the same): A's next publish
    // reaches nobody else, so A holds the room alone until it hears from B again.
    const admin = new Redis(redisUrl)
    try {
      const clients = (await admin.client('LIST')) as string
      const subscriber = /id=(\d+) .* name=d:sub /.exec(clients)?.[1]
      assert.ok(subscriber, "B's subscriber connection")
      await admin.client('KILL', 'ID', subscriber)
      writer.doc.getText('t').insert(1, 'y')
      await eventually(() => !atA.mayHavePeers(room), 'A learnt it was alone')
      const channel = `${channelPrefix}room:${room}`
      await eventually(
        async () => ((await admin.pubsub('NUMSUB', channel)) as [string, number])[1] === 2,
        "B's subscriber is back on the room",
      )
    } finally {
      await admin.quit()
    }
    // B's clients send nothing: only B's announcement on resubscribing can tell A.
    await eventually(() => atA.mayHavePeers(room), 'A heard B again')
    // A new client's edit (not waiting on 'y', which B missed while away: anti-entropy's to heal).
    const later = await connectSynced(a.wsUrl, room)
    later.doc.getMap('m').set('k', 'v')
    await eventually(() => reader.doc.getMap('m').get('k') === 'v', "A's later edits reach B's client")
  })
})
