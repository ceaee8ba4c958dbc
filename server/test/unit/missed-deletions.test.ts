import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  CHECKS_AT_ONCE,
  dropMissedDeletions,
  FAILURES_BEFORE_GIVING_UP,
  type HeldIncarnation,
  MissedDeletionChecks,
} from '../../src/core/missed-deletions.js'
import { eventually } from '../helpers/clients.js'
import { deferred } from '../helpers/deferred.js'
import { recordingLogger } from '../helpers/recording-logger.js'

const rooms = (count: number): HeldIncarnation[] =>
  Array.from({ length: count }, (_, i) => ({ name: `room-${i}`, generation: i % 3 }))

describe('a pass over the held rooms for deletions pub/sub missed', () => {
  it('drops exactly the rooms the store has moved past, a few store reads at a time, and returns those it could not read', async () => {
    const held = rooms(40)
    const deleted = new Set(['room-3', 'room-17', 'room-38'])
    let reading = 0
    let mostAtOnce = 0
    const drops: string[] = []
    const { dropped, unanswered } = await dropMissedDeletions(held, {
      storedGeneration: async (name) => {
        reading++
        mostAtOnce = Math.max(mostAtOnce, reading)
        await new Promise((resolve) => setImmediate(resolve))
        reading--
        if (name === 'room-5') throw new Error('the store did not answer')
        const generation = held.find((room) => room.name === name)?.generation ?? 0
        return deleted.has(name) ? generation + 1 : generation
      },
      drop: (name, generation) => void drops.push(`${name}@${generation}`),
      logger: recordingLogger(),
    })
    assert.deepEqual(dropped.sort(), [...deleted].sort())
    assert.deepEqual(drops.sort(), ['room-17@2', 'room-38@2', 'room-3@0'].sort())
    assert.deepEqual(unanswered, [{ name: 'room-5', generation: 2 }])
    assert.equal(mostAtOnce, CHECKS_AT_ONCE, 'bounded, and in parallel')
  })

  it('stops reading once the store failed again and again: the rest is left for a retry', async () => {
    let reads = 0
    const { unanswered } = await dropMissedDeletions(rooms(500), {
      storedGeneration: async () => {
        reads++
        throw new Error('down')
      },
      drop: () => assert.fail('nothing is known deleted'),
      logger: recordingLogger(),
    })
    assert.equal(unanswered.length, 500, 'every room still to check')
    assert.ok(reads < FAILURES_BEFORE_GIVING_UP + CHECKS_AT_ONCE, `${reads} reads of a store that is down`)
  })

  it('a drop that throws is logged, and the pass goes on', async () => {
    const logger = recordingLogger()
    const { dropped } = await dropMissedDeletions(rooms(3), {
      storedGeneration: async () => 10,
      drop: (name) => {
        if (name === 'room-0') throw new Error('closing failed')
      },
      logger,
    })
    assert.deepEqual(dropped.sort(), ['room-1', 'room-2'])
    assert.ok(logger.entries.some((entry) => entry.level === 'error'))
  })
})

describe('checking for deletions pub/sub missed', () => {
  it('checks the rooms the store did not answer for again until it does, and only while they are held', async () => {
    const held = new Map([
      ['kept', 0],
      ['deleted', 0],
      ['left', 0],
    ])
    let storeUp = false
    const reads: string[] = []
    const checks = new MissedDeletionChecks({
      storedGeneration: async (name) => {
        reads.push(name)
        if (!storeUp) throw new Error('down')
        return name === 'deleted' ? 1 : 0
      },
      drop: (name) => void held.delete(name),
      isHeld: (name, generation) => held.get(name) === generation,
      logger: recordingLogger(),
      retryBaseMs: 5,
      retryMaxMs: 20,
    })
    try {
      checks.check([...held].map(([name, generation]) => ({ name, generation })))
      await eventually(() => reads.length >= 6, 'read, failed, and read again')
      held.delete('left') // its clients left: it needs no check any more
      const readsBefore = reads.length
      storeUp = true
      await eventually(() => !held.has('deleted'), 'the deleted room dropped once the store answered')
      assert.deepEqual([...held.keys()], ['kept'])
      const readsAfter = reads.slice(readsBefore)
      assert.ok(!readsAfter.includes('left'), 'a room no longer held is not read again')
      const settled = reads.length
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(reads.length, settled, 'nothing read once every room was answered for')
    } finally {
      checks.stop()
    }
  })

  it('stops: the pass running finishes, and nothing is read again after it', async () => {
    const reads: string[] = []
    const release = deferred()
    const checks = new MissedDeletionChecks({
      storedGeneration: async (name) => {
        reads.push(name)
        await release.promise
        throw new Error('down')
      },
      drop: () => assert.fail('nothing known deleted'),
      isHeld: () => true,
      logger: recordingLogger(),
      retryBaseMs: 1,
    })
    checks.check(rooms(2))
    await eventually(() => reads.length === 2, 'the pass reads')
    checks.stop()
    checks.check(rooms(3))
    release.resolve()
    await new Promise((resolve) => setTimeout(resolve, 30))
    assert.equal(reads.length, 2, 'no retry, no later pass')
  })

  it('runs one pass at a time: rooms asked for meanwhile are read in the next', async () => {
    let reading = 0
    let mostAtOnce = 0
    const reads: string[] = []
    const checks = new MissedDeletionChecks({
      storedGeneration: async (name) => {
        reading++
        mostAtOnce = Math.max(mostAtOnce, reading)
        await new Promise((resolve) => setTimeout(resolve, 2))
        reading--
        reads.push(name)
        return 0
      },
      drop: () => assert.fail('nothing deleted'),
      isHeld: () => true,
      logger: recordingLogger(),
    })
    checks.check(rooms(CHECKS_AT_ONCE))
    checks.check(rooms(CHECKS_AT_ONCE))
    checks.check([{ name: 'later', generation: 0 }])
    await eventually(() => reads.includes('later'), 'the later room read')
    assert.equal(mostAtOnce, CHECKS_AT_ONCE, 'never two passes at once')
    assert.equal(reads.length, CHECKS_AT_ONCE * 2 + 1, 'the rooms asked for twice read in each pass')
    checks.stop()
  })
})
