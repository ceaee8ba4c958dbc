import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ROOM_TRANSITIONS, RoomLife, type RoomLifeSteps, type RoomState } from '../../src/core/room-life.js'
import { type Deferred, deferred } from '../helpers/deferred.js'
import { fakeTime } from './support/fake-time.js'
import { settle } from './support/turns.js'

const GRACE_MS = 1_000
const RETRY_MS = 5_000

/** A room's life whose every step waits for the test, recording the steps and transitions seen. */
function controlledLife() {
  const steps: string[] = []
  const transitions: string[] = []
  const pending = {
    load: deferred<string>(),
    save: null as Deferred<void> | null,
    saves: deferred(),
  }
  const calls: RoomLifeSteps<string> = {
    load: () => {
      steps.push('load')
      return pending.load.promise
    },
    saveBeforeUnload: () => {
      steps.push('save')
      pending.save = deferred()
      return pending.save.promise
    },
    closeDeleted: (loaded) => {
      steps.push(`close ${loaded}`)
    },
    closeLost: (loaded) => {
      steps.push(`close lost ${loaded}`)
    },
    savesSettled: () => {
      steps.push('saves settled?')
      return pending.saves.promise
    },
    free: async (loaded) => {
      steps.push(`free ${loaded}`)
    },
    removeStored: async (_loaded) => {
      steps.push('remove stored')
    },
    loadFailed: () => {
      steps.push('load failed')
    },
  }
  const life = new RoomLife({
    name: 'r',
    steps: calls,
    graceMs: GRACE_MS,
    retryUnloadMs: RETRY_MS,
    onTransition: (from, to) => transitions.push(`${from}→${to}`),
  })
  return { life, steps, transitions, pending }
}

describe('a room’s life: one transition each', () => {
  it('lists every transition it makes, and nothing leaves gone', () => {
    const all = Object.entries(ROOM_TRANSITIONS).flatMap(([from, to]) => to.map((next) => `${from}→${next}`))
    assert.deepEqual(all.sort(), [
      'deleting→gone',
      'live→deleting',
      'live→lost',
      'live→unloading',
      'loading→deleting',
      'loading→gone',
      'loading→live',
      'loading→lost',
      'lost→gone',
      'unloading→deleting',
      'unloading→gone',
      'unloading→live',
      'unloading→lost',
    ])
    assert.deepEqual(ROOM_TRANSITIONS.gone, [])
  })

  it('loading → live: admits holders once loaded', async () => {
    const { life, transitions, pending } = controlledLife()
    life.hold()
    assert.equal(life.state, 'loading')
    assert.equal(life.loaded, null, 'nothing to join while loading')
    pending.load.resolve('room')
    assert.equal(await life.ready, 'room')
    assert.equal(life.state, 'live')
    assert.equal(life.loaded, 'room')
    assert.deepEqual(transitions, ['loading→live'])
  })

  it('loading → gone: a failed load rejects its holders and admits nobody', async () => {
    const { life, steps, transitions, pending } = controlledLife()
    pending.load.reject(new Error('store down'))
    await assert.rejects(life.ready, /store down/)
    assert.equal(life.state, 'gone')
    assert.equal(life.admits, false)
    assert.deepEqual(steps, ['load', 'load failed'])
    assert.deepEqual(transitions, ['loading→gone'])
  })

  it('loading → deleting → gone: a deletion during the load takes effect at once, and runs after it', async () => {
    const { life, steps, transitions, pending } = controlledLife()
    const deleted = life.delete()
    assert.equal(life.state, 'deleting', 'before any wait')
    assert.equal(life.admits, false, 'no joiner is admitted from now on')
    pending.load.resolve('room')
    pending.saves.resolve()
    await deleted
    assert.deepEqual(steps, ['load', 'close room', 'saves settled?', 'free room', 'remove stored'])
    assert.deepEqual(transitions, ['loading→deleting', 'deleting→gone'])
  })

  it('live → unloading → gone: after the grace period nobody held it, saved then freed', async (t) => {
    const tick = fakeTime(t)
    const { life, steps, transitions, pending } = controlledLife()
    life.hold()
    pending.load.resolve('room')
    await life.ready
    life.unhold()
    await tick(GRACE_MS - 1)
    assert.equal(life.state, 'live', 'within the grace period')
    await tick(1)
    assert.equal(life.state, 'unloading')
    pending.save?.resolve()
    await settle()
    assert.equal(life.state, 'gone')
    assert.deepEqual(steps, ['load', 'save', 'free room'])
    assert.deepEqual(transitions, ['loading→live', 'live→unloading', 'unloading→gone'])
  })

  it('live → unloading at once when shed to free memory: no grace once the last holder leaves; a new holder restores it', async (t) => {
    const tick = fakeTime(t)
    const { life, steps, pending } = controlledLife()
    life.hold()
    life.hold()
    pending.load.resolve('room')
    await life.ready
    life.unloadWhenFree()
    life.unhold()
    await tick(0)
    assert.equal(life.state, 'live', 'still held')
    life.hold() // someone came back: the grace is theirs again
    life.unhold()
    life.unhold()
    await tick(GRACE_MS - 1)
    assert.equal(life.state, 'live', 'within the restored grace period')
    life.unloadWhenFree() // shed again, nobody holding it
    await tick(0)
    assert.equal(life.state, 'unloading', 'saved and freed at once')
    pending.save?.resolve()
    await settle()
    assert.equal(life.state, 'gone')
    assert.deepEqual(steps, ['load', 'save', 'free room'])
  })

  it('unloading → live: a failed final save keeps the room, and unloading is tried again later', async (t) => {
    const tick = fakeTime(t)
    const { life, steps, transitions, pending } = controlledLife()
    pending.load.resolve('room')
    await life.ready
    await tick(GRACE_MS)
    pending.save?.reject(new Error('S3 down'))
    await settle()
    assert.equal(life.state, 'live')
    assert.equal(life.loaded, 'room', 'kept with its unsaved changes')
    await tick(RETRY_MS)
    pending.save?.resolve()
    await settle()
    assert.equal(life.state, 'gone')
    assert.deepEqual(steps, ['load', 'save', 'save', 'free room'])
    assert.deepEqual(transitions, [
      'loading→live',
      'live→unloading',
      'unloading→live',
      'live→unloading',
      'unloading→gone',
    ])
  })

  it('unloading → deleting: a deletion during the final save frees once, and clears the stores after', async (t) => {
    const tick = fakeTime(t)
    const { life, steps, transitions, pending } = controlledLife()
    pending.load.resolve('room')
    await life.ready
    await tick(GRACE_MS)
    const deleted = life.delete()
    assert.equal(life.state, 'deleting')
    pending.save?.resolve()
    pending.saves.resolve()
    await deleted
    assert.deepEqual(steps, [
      'load',
      'save',
      'close room',
      'close room',
      'saves settled?',
      'free room',
      'remove stored',
    ])
    assert.deepEqual(transitions, ['loading→live', 'live→unloading', 'unloading→deleting', 'deleting→gone'])
  })

  it('live → deleting → gone: clients closed at once; freed only once its saves settled; stores cleared last', async () => {
    const { life, steps, transitions, pending } = controlledLife()
    life.hold()
    pending.load.resolve('room')
    await life.ready
    const deleted = life.delete()
    assert.deepEqual(steps, ['load', 'close room'], 'closed before any wait')
    await settle()
    assert.equal(steps.at(-1), 'saves settled?', 'waits for the save in flight')
    pending.saves.resolve()
    await deleted
    assert.deepEqual(steps.slice(-2), ['free room', 'remove stored'])
    assert.deepEqual(transitions, ['loading→live', 'live→deleting', 'deleting→gone'])
    const states: RoomState[] = [life.state]
    life.unhold() // a holder leaving late changes nothing
    await life.delete()
    assert.deepEqual([...states, life.state], ['gone', 'gone'])
  })
})

describe('a room lost to a later owner', () => {
  it('live → lost → gone: clients closed at once, freed once its saves settled, never saved again nor its stores cleared', async () => {
    const { life, steps, transitions, pending } = controlledLife()
    life.hold()
    pending.load.resolve('room')
    await life.ready
    const lost = life.lose()
    assert.equal(life.state, 'lost', 'before any wait')
    assert.equal(life.admits, false, 'joiners wait for the next instance')
    assert.equal(life.loaded, null)
    assert.deepEqual(steps, ['load', 'close lost room'])
    pending.saves.resolve()
    await lost
    assert.deepEqual(steps.slice(2), ['close lost room', 'saves settled?', 'free room'])
    assert.deepEqual(transitions, ['loading→live', 'live→lost', 'lost→gone'])
    assert.ok(life.wasLost)
    life.unhold() // a holder leaving late starts no unload
    await life.delete() // nor does a deletion reach it (the manager removes the journal)
    assert.deepEqual(steps.slice(-1), ['free room'])
  })

  it('loading → lost: a write refused while it loads ends it once loaded, without going live', async () => {
    const { life, steps, transitions, pending } = controlledLife()
    life.hold()
    const lost = life.lose()
    pending.load.resolve('room')
    pending.saves.resolve()
    await lost
    assert.deepEqual(transitions, ['loading→lost', 'lost→gone'])
    assert.deepEqual(steps, ['load', 'close lost room', 'saves settled?', 'free room'])
  })

  it('unloading → lost: the final save refused as stale frees it without another try', async (t) => {
    const tick = fakeTime(t)
    const { life, transitions, pending } = controlledLife()
    pending.load.resolve('room')
    await life.ready
    await tick(GRACE_MS)
    assert.equal(life.state, 'unloading')
    const lost = life.lose()
    pending.save?.reject(new Error('stale'))
    pending.saves.resolve()
    await lost
    await tick(RETRY_MS)
    assert.deepEqual(transitions, ['loading→live', 'live→unloading', 'unloading→lost', 'lost→gone'])
  })
})

describe('a room’s load, retried while someone waits', () => {
  /** A life whose load attempts the test settles one by one, retried after 100 ms doubling to 400. */
  function retryingLife() {
    const attempts: Deferred<string>[] = []
    const steps: string[] = []
    const life = new RoomLife<string>({
      name: 'r',
      graceMs: GRACE_MS,
      retryUnloadMs: RETRY_MS,
      loadRetry: { baseMs: 100, maxMs: 400 },
      steps: {
        load: () => {
          const attempt = deferred<string>()
          attempts.push(attempt)
          steps.push('load')
          return attempt.promise
        },
        saveBeforeUnload: async () => {},
        closeDeleted: () => {},
        closeLost: () => {},
        savesSettled: async () => {},
        free: async () => {},
        removeStored: async () => {},
        loadFailed: () => steps.push('load failed'),
        loadRetrying: (_error, attempt) => steps.push(`retry ${attempt}`),
      },
    })
    /** Attempt `n` fails as a store that is down does. */
    const fail = async (n: number) => {
      attempts[n]?.reject(new Error('store down'))
      await settle()
    }
    return { life, attempts, steps, fail }
  }

  it('tries again while the room is held, and goes live once an attempt succeeds', async (t) => {
    const tick = fakeTime(t)
    const { life, attempts, steps, fail } = retryingLife()
    life.hold()
    await settle()
    await fail(0)
    assert.equal(life.state, 'loading', 'still loading, not gone')
    await tick(100)
    await fail(1)
    await tick(200)
    attempts[2]?.resolve('room')
    assert.equal(await life.ready, 'room')
    assert.equal(life.state, 'live')
    assert.deepEqual(steps, ['load', 'retry 1', 'load', 'retry 2', 'load'])
  })

  it('gives up (loading → gone) once nobody holds the room', async (t) => {
    const tick = fakeTime(t)
    const { life, steps, fail } = retryingLife()
    life.hold()
    await settle()
    await fail(0)
    life.unhold() // the only joiner left while the load waited to retry
    await tick(100)
    await assert.rejects(life.ready, /store down/)
    assert.equal(life.state, 'gone')
    assert.deepEqual(steps, ['load', 'retry 1', 'load failed'])
  })
})
