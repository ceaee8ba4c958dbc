// What one event-loop turn publishes or appends goes to Redis as a few commands, not as one call
// spread into arguments: a turn of tens of thousands of messages (200 connections each sending a
// burst under MESSAGE_BURST while their room loads) passed V8's argument limit and threw out of
// the end-of-turn flush, an uncaught exception that ended the server.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { eventually } from '@symphony/test-helpers/clients'
import { requireTestServices, uniqueName } from '@symphony/test-helpers/services'
import { RedisPubSub } from '../src/adapters/redis-pubsub.js'
import { RedisUpdateJournal } from '../src/adapters/redis-update-journal.js'
import { silentLogger } from '../src/logger.js'

/** Replaces the process's uncaught-exception listeners with one that records, until `stop`. */
function captureUncaught(): { errors: unknown[]; stop(): void } {
  const errors: unknown[] = []
  const listeners = process.listeners('uncaughtException')
  process.removeAllListeners('uncaughtException')
  const record = (error: unknown) => errors.push(error)
  process.on('uncaughtException', record)
  return {
    errors,
    stop() {
      process.off('uncaughtException', record)
      for (const listener of listeners) process.on('uncaughtException', listener)
    },
  }
}

const MESSAGES = 80_000

describe('a very large turn', () => {
  it(`${MESSAGES} messages published in one turn all reach a peer, and nothing escapes the turn`, async () => {
    const { redisUrl } = requireTestServices()
    const channelPrefix = `${uniqueName('huge-turn')}:`
    const [sender, peer] = ['sender', 'peer'].map(
      (id) => new RedisPubSub(id, redisUrl, { channelPrefix, logger: silentLogger }),
    ) as [RedisPubSub, RedisPubSub]
    let received = 0
    await peer.subscribe('room', () => received++)
    await sender.subscribe('room', () => {})
    const caught = captureUncaught()
    try {
      const frame = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])
      for (let i = 0; i < MESSAGES; i++) sender.publish('room', frame)
      await eventually(() => received === MESSAGES, `the peer received ${MESSAGES} messages`, 30_000)
    } finally {
      caught.stop()
      await Promise.all([sender.close(), peer.close()])
    }
    assert.deepEqual(caught.errors.map(String), [])
  })

  it('50 000 appends in one turn are all confirmed', async () => {
    const { redisUrl } = requireTestServices()
    const journal = new RedisUpdateJournal('huge', redisUrl, {
      keyPrefix: `${uniqueName('huge-turn')}:`,
      logger: silentLogger,
    })
    const caught = captureUncaught()
    let results: PromiseSettledResult<unknown>[] = []
    try {
      const update = new Uint8Array([0, 0])
      const appends = Array.from({ length: 50_000 }, (_, i) => journal.append(`room-${i % 7}`, update))
      results = await Promise.allSettled(appends)
    } finally {
      caught.stop()
      await journal.close()
    }
    const failed = results.filter((result) => result.status === 'rejected')
    assert.deepEqual(failed.slice(0, 1), [])
    assert.deepEqual(caught.errors.map(String), [])
  })
})
