// A room deleted on a server that believes it holds it alone, while another server has subscribed
// to it and is still loading it (so it has not announced itself yet): the loading server must still
// hear of the deletion. Otherwise it goes live with the deleted incarnation, acknowledges edits into
// it, and its next save meets the tombstone and drops them.
import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { cleanUpAfterTest } from '@symphony/test-helpers/cleanup'
import { connectSynced, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { ControlledSnapshotStore } from '@symphony/test-helpers/controlled-store'
import { deferred } from '@symphony/test-helpers/deferred'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import { requireTestServices, uniqueName } from '@symphony/test-helpers/services'
import { startTestServer } from '@symphony/test-helpers/test-server'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import { RedisPubSub } from '../src/adapters/redis-pubsub.js'
import { RedisUpdateJournal } from '../src/adapters/redis-update-journal.js'
import { silentLogger } from '../src/logger.js'
import type { JournalContents } from '../src/ports/update-journal.js'

const internal = {
  port: 0,
  advertisedHost: '127.0.0.1',
  token: 'test-internal-token-0123456789',
  fetchTimeoutMs: 1_000,
}

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

describe('a room deleted while another server loads it', () => {
  it('never comes back there, and an edit acknowledged after the deletion is kept', {
    timeout: 40_000,
  }, async () => {
    const { redisUrl } = requireTestServices()
    const prefix = `${uniqueName('deleted-while-loading')}:`
    // B cannot see A in the registry (A's registration has not landed yet, or the registry is
    // unavailable to B): B loads from the store and the journal. With A found, A's answer that the
    // room is gone makes B retry, which is another path.
    const registryA = new MemoryRegistryTable()
    const registryB = new MemoryRegistryTable()
    const snapshots = new MemorySnapshotStore() // one store, as S3 is
    // A's saves answer slowly (S3 under load): a save is in flight when the deletion comes, so A's
    // unsubscribe waits for it and the deletion is published while A still believes it is alone.
    const storeA = new ControlledSnapshotStore(snapshots)
    const saveHeld = deferred()
    storeA.saveGate = saveHeld.promise
    const pubsubA = new RedisPubSub('ra', redisUrl, { channelPrefix: prefix, logger: silentLogger })
    const pubsubB = new RedisPubSub('rb', redisUrl, { channelPrefix: prefix, logger: silentLogger })
    const journalA = new RedisUpdateJournal('ra', redisUrl, { keyPrefix: prefix, logger: silentLogger })
    const journalB = new RedisUpdateJournal('rb', redisUrl, { keyPrefix: prefix, logger: silentLogger })
    // B's first journal read (its load of the deleted incarnation) is answered only once the test
    // lets it: B has subscribed and read the incarnation, and is still loading.
    const readStarted = deferred()
    const readHeld = deferred()
    let reads = 0
    const heldJournalB = new Proxy(journalB, {
      get(target, property) {
        if (property === 'read')
          return async (room: string): Promise<JournalContents> => {
            const contents = await target.read(room)
            if (++reads === 1) {
              readStarted.resolve()
              await readHeld.promise
            }
            return contents
          }
        const value = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    // Released however the test ends: a server stops only once its held load and save are answered.
    try {
      const a = await startTestServer({
        serverId: 'ra',
        registryTable: registryA,
        internal,
        adapters: { pubsub: pubsubA, journal: journalA, snapshots: storeA },
      })
      const b = await startTestServer({
        serverId: 'rb',
        registryTable: registryB,
        internal,
        adapters: { pubsub: pubsubB, journal: heldJournalB, snapshots },
      })
      const room = uniqueRoom()
      const writer = await connectSynced(a.wsUrl, room)
      writer.doc.getText('t').insert(0, 'x')
      await eventually(
        () => a.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'x',
        'A applied x',
      )
      await eventually(() => !pubsubA.mayHavePeers(room), 'A learnt from Redis that it holds the room alone')

      const saving = a.server.manager.save(room) // the periodic save, say: held by the slow store
      saving.catch(() => {})
      await eventually(() => storeA.saveAttempts >= 1, "A's save is in flight")
      // A user opens the room on B: B subscribes, reads the incarnation and the journal.
      const onB = nodeClient(b.wsUrl).enter(room)
      await readStarted.promise
      assert.equal(b.server.manager.roomState(room), 'loading')

      // Meanwhile the room is deleted on A (a REST DELETE).
      const deleted = a.server.manager.delete(room)
      await eventually(async () => (await snapshots.head(room))?.deleted === true, 'the tombstone is written')
      await eventually(
        () => b.server.manager.roomState(room) === 'deleting',
        'B, still loading, learns of the deletion',
        5_000,
      )
      readHeld.resolve()
      saveHeld.resolve()
      await deleted

      // B's load of the deleted incarnation ends; its client joins the fresh, empty one.
      await onB.whenSynced()
      await eventually(() => b.server.manager.roomState(room) === 'live', 'B serves the room again')
      assert.equal(onB.doc.getText('t').toString(), '', 'the client on B does not see the deleted content')
      assert.equal(
        b.server.manager.loadedRoom(room)?.doc.getText('t').toString(),
        '',
        'B serves a fresh room',
      )

      onB.doc.getText('t').insert(0, 'y')
      await eventually(() => !onB.hasUnsyncedChanges(), 'the edit on B is acknowledged')
      // B's next save (its timer; here at once) writes the fresh incarnation over the tombstone.
      await b.server.manager.save(room)
      assert.equal(b.server.manager.roomState(room), 'live', 'B still holds the room after saving it')
      const fresh = await connectSynced(a.wsUrl, room)
      await eventually(
        () => fresh.doc.getText('t').toString().includes('y'),
        'a new user on A sees the acknowledged edit',
      )
      assert.equal(fresh.doc.getText('t').toString(), 'y', 'the deleted content never comes back')
    } finally {
      saveHeld.resolve()
      readHeld.resolve()
    }
  })
})
