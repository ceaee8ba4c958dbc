// What one event-loop turn appends goes to Redis as a few commands, not as one call spread into
// arguments: a turn of tens of thousands of messages (200 connections each sending a burst under
// MESSAGE_BURST while their room loads) passed V8's argument limit and threw out of the
// end-of-turn flush, an uncaught exception that ended the server.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { requireTestServices, uniqueName } from '@symphony/test-helpers/services'
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

describe('a very large turn', () => {
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
