import { afterEach, describe, it } from 'node:test'
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
    const a = await startTestServer({ serverId: 'a', registryTable, internal, adapters: { pubsub: atA } })
    const b = await startTestServer({ serverId: 'b', registryTable, internal, adapters: { pubsub: atB } })
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
})
