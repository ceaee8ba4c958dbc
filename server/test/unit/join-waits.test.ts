import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { ControlledSnapshotStore } from '@symphony/test-helpers/controlled-store'
import { deferred } from '@symphony/test-helpers/deferred'
import { eventually } from '../../src/contracts/eventually.js'
import { uniqueRoom } from '../../src/contracts/unique-room.js'
import type { RoomManager } from '../../src/core/room-manager.js'
import type { SnapshotHead } from '../../src/ports/snapshot-store.js'
import { freed } from './support/collected.js'
import { TestWorld } from './support/test-world.js'
import { until } from './support/turns.js'

const DEPARTED = 200

/** Counts load attempts (each starts with the head), failing them while `failLoads` is set. */
class CountingStore extends ControlledSnapshotStore {
  heads = 0
  override head(room: string): Promise<SnapshotHead | null> {
    this.heads++
    return super.head(room)
  }
}

/** `DEPARTED` joiners each start waiting for `room` and leave; weak references to their signals. */
async function departures(manager: RoomManager, room: string): Promise<WeakRef<AbortSignal>[]> {
  const signals: WeakRef<AbortSignal>[] = []
  for (let i = 0; i < DEPARTED; i++) {
    const wait = new AbortController()
    signals.push(new WeakRef(wait.signal))
    const joined = manager.acquire(room, wait.signal)
    wait.abort(new Error('the client left'))
    await assert.rejects(joined, /the client left/)
  }
  return signals
}

let world: TestWorld

describe('joiners who stop waiting for a room', () => {
  afterEach(() => world.close())

  it('leave nothing behind while its load keeps failing, and the load is retried for the one still waiting', async () => {
    world = new TestWorld()
    const store = new CountingStore(world.snapshots)
    store.failLoads = true // the store is down, or the snapshot cannot be read
    const server = world.server({ snapshots: store, options: { loadRetry: { baseMs: 5, maxMs: 20 } } })
    const room = uniqueRoom()
    const stays = new AbortController()
    const held = server.manager.acquire(room, stays.signal)
    held.catch(() => {})
    try {
      await until(() => store.heads >= 1, 'the load started')
      const signals = await departures(server.manager, room)
      assert.equal(server.manager.roomState(room), 'loading', 'still loading for the one who stays')
      assert.equal(
        await freed(signals),
        DEPARTED,
        'every departed joiner is freed while the load still fails',
      )

      const attempts = store.heads
      await eventually(() => store.heads > attempts, 'the load is tried again') // after its backoff timer
      store.failLoads = false // the store is back: the one who stayed joins
      const hold = await held
      assert.equal(server.manager.roomState(room), 'live')
      hold.release()
    } finally {
      stays.abort(new Error('the test ended')) // else the load is retried, and the world never closes
    }
  })

  it('leave nothing behind while it is being unloaded, and the one still waiting gets it back', async () => {
    world = new TestWorld()
    const store = new ControlledSnapshotStore(world.snapshots)
    const server = world.server({ snapshots: store, options: { roomGraceMs: 0 } })
    const room = uniqueRoom()
    const client = server.connect(room)
    await client.ready
    const saveHeld = deferred()
    store.saveGate = saveHeld.promise // the final save before unloading does not answer
    try {
      client.doc.getText('t').insert(0, 'x')
      await until(
        () => server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'x',
        'the edit applied',
      )
      client.disconnect()
      await until(
        () => server.manager.roomState(room) === 'unloading' && store.saveAttempts > 0,
        'unloading, its save held',
      )

      const stays = server.manager.acquire(room, new AbortController().signal)
      const signals = await departures(server.manager, room)
      assert.equal(await freed(signals), DEPARTED, 'every departed joiner is freed while the room unloads')

      saveHeld.resolve()
      const hold = await stays
      assert.equal(hold.room.doc.getText('t').toString(), 'x', 'the room, loaded again with its edit')
      hold.release()
    } finally {
      saveHeld.resolve() // else the world never closes
    }
  })
})
