import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EventStream } from '../../src/core/event-stream.js'
import type { ServerEventOf } from '../../src/core/server-events.js'
import { ChangeDebounce } from '../../src/observers/change-debounce.js'
import { recordingLogger } from '../helpers/recording-logger.js'

const DELETED: ServerEventOf<'room.deleted'> = { type: 'room.deleted', room: 'r', at: 1 }

describe('the event stream', () => {
  it('calls the listeners of a type, in the order they subscribed, and no others', () => {
    const stream = new EventStream(recordingLogger())
    const calls: string[] = []
    stream.on('room.deleted', (event) => void calls.push(`first ${event.room}`))
    stream.on('room.loaded', () => void calls.push('loaded'))
    stream.on('room.deleted', (event) => void calls.push(`second ${event.room}`))
    stream.emit(DELETED)
    assert.deepEqual(calls, ['first r', 'second r'])
  })

  it('says whether anyone listens for a type, so the hot path builds no event for nobody', () => {
    const stream = new EventStream(recordingLogger())
    assert.equal(stream.listens('document.changed'), false)
    const off = stream.on('document.changed', () => {})
    assert.equal(stream.listens('document.changed'), true)
    assert.equal(stream.listens('room.loaded'), false)
    off()
    assert.equal(stream.listens('document.changed'), false)
  })

  it('unsubscribes one listener once, the others stay; an emit in progress keeps its list', () => {
    const stream = new EventStream(recordingLogger())
    const calls: string[] = []
    const off = stream.on('room.deleted', () => {
      calls.push('a')
      off() // during the emit: b still runs this time
    })
    stream.on('room.deleted', () => void calls.push('b'))
    stream.emit(DELETED)
    off()
    stream.emit(DELETED)
    assert.deepEqual(calls, ['a', 'b', 'b'])
  })

  it('logs a listener that throws or rejects, and still calls the next', async () => {
    const logger = recordingLogger()
    const stream = new EventStream(logger)
    const calls: string[] = []
    stream.on('room.deleted', () => {
      throw new Error('sync bug')
    })
    stream.on('room.deleted', async () => {
      throw new Error('async bug')
    })
    stream.on('room.deleted', () => void calls.push('after'))
    assert.doesNotThrow(() => stream.emit(DELETED))
    assert.deepEqual(calls, ['after'])
    await new Promise((resolve) => setImmediate(resolve))
    const failures = logger.entries.filter((entry) => entry.message === 'an event listener failed')
    assert.deepEqual(
      failures.map((entry) => [(entry.fields.err as Error).message, entry.fields.event, entry.fields.room]),
      [
        ['sync bug', 'room.deleted', 'r'],
        ['async bug', 'room.deleted', 'r'],
      ],
    )
  })
})

describe("onChange's debounce", () => {
  it('folds the changes of one key into one call, keys apart; settle runs what is pending', async () => {
    const calls: [string, number][] = []
    const debounce = new ChangeDebounce<number>(
      { debounceMs: 60_000, maxWaitMs: 60_000 },
      (key, count) => void calls.push([key, count]),
      () => {},
    )
    for (let i = 0; i < 3; i++) debounce.touch('a', (n) => (n ?? 0) + 1)
    debounce.touch('b', (n) => (n ?? 0) + 1)
    assert.deepEqual(calls, [], 'nothing before the debounce ends')
    await debounce.settle()
    assert.deepEqual(calls, [
      ['a', 3],
      ['b', 1],
    ])
  })

  it('runs the calls of one key one after another, and reports a failure without stopping the next', async () => {
    const failures: unknown[] = []
    let running = 0
    let most = 0
    const debounce = new ChangeDebounce<number>(
      { debounceMs: 0, maxWaitMs: 0 },
      async (_key, value) => {
        running++
        most = Math.max(most, running)
        await new Promise((resolve) => setImmediate(resolve))
        running--
        if (value === 1) throw new Error('first fails')
      },
      (error) => void failures.push(error),
    )
    debounce.touch('a', () => 1)
    debounce.flush('a')
    debounce.touch('a', () => 2)
    debounce.flush('a')
    await debounce.settle()
    assert.equal(most, 1, 'never two at once')
    assert.deepEqual(
      failures.map((error) => (error as Error).message),
      ['first fails'],
    )
  })
})
