import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ReconnectSchedule } from '../src/reconnect-schedule.js'

describe('reconnect schedule (exponential backoff, full jitter)', () => {
  it('doubles the ceiling after each failure up to the maximum', () => {
    const schedule = new ReconnectSchedule({ baseDelayMs: 100, maxDelayMs: 1_000 })
    const ceilings: number[] = []
    for (let i = 0; i < 7; i++) {
      ceilings.push(schedule.ceiling())
      schedule.nextDelay()
    }
    assert.deepEqual(ceilings, [100, 200, 400, 800, 1_000, 1_000, 1_000])
    assert.equal(schedule.failures, 7)
  })

  it('draws each wait uniformly between zero and the ceiling', () => {
    const draws = [0, 0.5, 0.999_999]
    const schedule = new ReconnectSchedule({ baseDelayMs: 100, maxDelayMs: 1_000 }, () => draws.shift() ?? 0)
    assert.equal(schedule.nextDelay(), 0) // full jitter may retry at once
    assert.equal(schedule.nextDelay(), 100) // half of 200
    assert.equal(schedule.nextDelay(), 399) // just under 400, never the ceiling itself
  })

  it('spreads a crowd of clients instead of retrying in lockstep', () => {
    const delays = Array.from({ length: 1_000 }, () => {
      const schedule = new ReconnectSchedule({ baseDelayMs: 500, maxDelayMs: 30_000 })
      for (let i = 0; i < 4; i++) schedule.nextDelay()
      return schedule.nextDelay() // the fifth wait: ceiling 8 000 ms
    })
    assert.ok(delays.every((d) => d >= 0 && d < 8_000))
    const buckets = new Set(delays.map((d) => Math.floor(d / 1_000)))
    assert.equal(buckets.size, 8, 'waits cover the whole window')
  })

  it('stays finite after very many failures and starts short again after a reset', () => {
    const schedule = new ReconnectSchedule({ baseDelayMs: 500, maxDelayMs: 30_000 }, () => 0.5)
    for (let i = 0; i < 5_000; i++) schedule.nextDelay()
    assert.equal(schedule.nextDelay(), 15_000)
    schedule.reset()
    assert.equal(schedule.failures, 0)
    assert.equal(schedule.nextDelay(), 250)
  })

  it('refuses delays that make no sense', () => {
    assert.throws(() => new ReconnectSchedule({ baseDelayMs: 0 }), RangeError)
    assert.throws(() => new ReconnectSchedule({ baseDelayMs: 1_000, maxDelayMs: 10 }), RangeError)
    assert.throws(() => new ReconnectSchedule({ baseDelayMs: Number.NaN }), RangeError)
  })
})
