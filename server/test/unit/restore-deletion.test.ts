import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import { restoreVersion } from '../../src/core/restore-version.js'
import { RoomDeletedError } from '../../src/errors.js'
import { ControlledSnapshotStore } from '../helpers/controlled-store.js'
import { deferred } from '../helpers/deferred.js'
import { TestWorld } from './support/test-world.js'
import { settle, until } from './support/turns.js'

let world: TestWorld

describe('a restore that meets a deletion of its room', () => {
  afterEach(() => world.close())

  it('fails with ROOM_DELETED, and tells no one the room was restored', async () => {
    world = new TestWorld()
    const room = uniqueRoom()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store })
    const client = server.connect(room)
    await client.ready
    client.doc.getText('t').insert(0, 'first')
    await settle()
    await server.manager.save(room)
    const [saved] = (await store.listVersions(room, { limit: 1 })).versions
    client.doc.getText('t').insert(5, ' and more')
    await settle()

    const restored: string[] = []
    server.events.on('document.restored', ({ room: name }) => void restored.push(name))
    // The restore's save is held at the store; the deletion comes meanwhile.
    const gate = deferred()
    store.saveGate = gate.promise
    const deps = {
      hold: (name: string) => server.manager.acquire(name),
      save: (name: string) => server.manager.save(name),
      snapshots: store,
      events: server.events,
      saveWaitMs: 5_000,
    }
    const restoring = restoreVersion(deps, room, saved?.id ?? '')
    restoring.catch(() => {})
    await until(() => store.saveAttempts > 1, 'the restore is being saved')
    const deleting = server.manager.delete(room)
    await settle()
    gate.resolve()
    await deleting
    await assert.rejects(restoring, (error: unknown) => error instanceof RoomDeletedError)
    assert.deepEqual(restored, [], 'no document.restored for a room that is gone')
  })
})
