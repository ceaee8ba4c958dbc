import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CHECKS_AT_ONCE, dropMissedDeletions } from '../../src/core/missed-deletions.js'
import { recordingLogger } from '../helpers/recording-logger.js'

describe('checking the held rooms for deletions pub/sub missed', () => {
  it('drops exactly the rooms the store has moved past, a few store reads at a time, and keeps those it could not read', async () => {
    const held = Array.from({ length: 40 }, (_, i) => ({ name: `room-${i}`, generation: i % 3 }))
    const deleted = new Set(['room-3', 'room-17', 'room-38'])
    const unreadable = 'room-5'
    let reading = 0
    let mostAtOnce = 0
    const logger = recordingLogger()
    const drops: string[] = []
    const dropped = await dropMissedDeletions({
      held,
      storedGeneration: async (name) => {
        reading++
        mostAtOnce = Math.max(mostAtOnce, reading)
        await new Promise((resolve) => setImmediate(resolve))
        reading--
        if (name === unreadable) throw new Error('the store did not answer')
        const generation = held.find((room) => room.name === name)?.generation ?? 0
        return deleted.has(name) ? generation + 1 : generation
      },
      drop: (name, generation) => void drops.push(`${name}@${generation}`),
      logger,
    })
    assert.deepEqual(dropped.sort(), [...deleted].sort())
    assert.deepEqual(drops.sort(), ['room-17@2', 'room-38@2', 'room-3@0'].sort())
    assert.equal(mostAtOnce, CHECKS_AT_ONCE, 'bounded, and in parallel')
    assert.ok(
      logger.entries.some((entry) => entry.message.startsWith('could not check') && entry.fields.rooms === 1),
      'the unreadable room is reported',
    )
  })

  it('reads nothing when no room is held', async () => {
    const dropped = await dropMissedDeletions({
      held: [],
      storedGeneration: () => assert.fail('nothing to read'),
      drop: () => assert.fail('nothing to drop'),
      logger: recordingLogger(),
    })
    assert.deepEqual(dropped, [])
  })
})
