import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LeaseHeartbeat } from '../../src/adapters/lease-heartbeat.js'

describe("a server's lease heartbeat", () => {
  it('tells of a lapse when a renewal finds the lease it last wrote run out, and only then', async () => {
    let now = 0
    const written: number[] = []
    const heartbeat = new LeaseHeartbeat(
      { leaseMs: 3_000, now: () => now },
      async (expiresAt) => {
        written.push(expiresAt)
      },
      () => {},
    )
    let lapses = 0
    heartbeat.onLapsed((lapse) => {
      if (lapse === 'renewed') lapses++
    })
    try {
      await heartbeat.renewNow()
      now = 2_900 // within the lease written at 0
      await heartbeat.renewNow()
      assert.equal(lapses, 0)
      now = 5_901 // the lease written at 2,900 ran out at 5,900: a stall, or a registry that did not answer
      await heartbeat.renewNow()
      assert.equal(lapses, 1)
      now = 6_000
      await heartbeat.renewNow()
      assert.equal(lapses, 1, 'renewed in time again')
      assert.deepEqual(written, [3_000, 5_900, 8_901, 9_000])
    } finally {
      heartbeat.stop()
    }
  })

  it('tells of a lease run out unrenewed once it runs out, and of the renewal after it', async () => {
    let now = 0
    let fail = false
    const heartbeat = new LeaseHeartbeat(
      { leaseMs: 3_000, now: () => now },
      async () => {
        if (fail) throw new Error('registry down')
      },
      () => {},
    )
    const told: string[] = []
    heartbeat.onLapsed((lapse) => told.push(lapse))
    try {
      await heartbeat.renewNow()
      fail = true
      now = 4_000
      await assert.rejects(heartbeat.renewNow(), /registry down/)
      assert.deepEqual(told, ['run-out'], 'run out unrenewed: told at once, not renewed yet')
      heartbeat.checkRunOut()
      assert.deepEqual(told, ['run-out'], 'told once')
      fail = false
      await heartbeat.renewNow()
      assert.deepEqual(told, ['run-out', 'renewed'], 'told again once a renewal lands after the lapse')
    } finally {
      heartbeat.stop()
    }
  })

  it('tells nothing while the lease it last wrote still runs, renewed or not', async () => {
    const now = 0
    const heartbeat = new LeaseHeartbeat(
      { leaseMs: 3_000, now: () => now },
      async () => {
        throw new Error('registry down')
      },
      () => {},
    )
    const told: string[] = []
    heartbeat.onLapsed((lapse) => told.push(lapse))
    try {
      await assert.rejects(heartbeat.renewNow())
      heartbeat.checkRunOut()
      assert.deepEqual(told, [], 'no lease written yet: nothing to run out')
    } finally {
      heartbeat.stop()
    }
  })
})
