import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { claimStep, isLiveOwner, type OwnerRecord } from '../../src/adapters/room-ownership-rules.js'

const record = (fields: Partial<OwnerRecord> = {}): OwnerRecord => ({
  serverId: 'a',
  internalAddress: 'a:1',
  epoch: 3,
  boot: 'boot-1',
  released: false,
  ...fields,
})
const A = { serverId: 'a', boot: 'boot-1' }
const B = { serverId: 'b', boot: 'boot-9' }

describe('room ownership rules', () => {
  it('judge an owner live by its own start’s lease, never a later start’s, nor a released room', () => {
    const now = 1_000
    assert.equal(isLiveOwner(record(), { boot: 'boot-1', expiresAt: 2_000 }, now), true)
    assert.equal(isLiveOwner(record(), { boot: 'boot-1', expiresAt: 1_000 }, now), false, 'lapsed')
    assert.equal(isLiveOwner(record(), { boot: 'boot-2', expiresAt: 2_000 }, now), false, 'restarted since')
    assert.equal(isLiveOwner(record(), undefined, now), false, 'no lease')
    assert.equal(isLiveOwner(record({ released: true }), { boot: 'boot-1', expiresAt: 2_000 }, now), false)
  })

  it('take a room never owned at epoch 1, a dead or released owner’s at the next epoch, a live one’s only when it is known gone', () => {
    assert.deepEqual(claimStep(null, false, B), { kind: 'take', epoch: 1, expected: null })
    const owner = { serverId: 'a', internalAddress: 'a:1', epoch: 3 }
    assert.deepEqual(claimStep(record(), true, B), { kind: 'held', claim: { owned: false, owner } })
    assert.deepEqual(claimStep(record(), false, B), { kind: 'take', epoch: 4, expected: 3 })
    assert.deepEqual(claimStep(record(), true, B, owner), { kind: 'take', epoch: 4, expected: 3 })
    assert.deepEqual(claimStep(record(), true, B, { ...owner, epoch: 2 }), {
      kind: 'held',
      claim: { owned: false, owner },
    })
    assert.deepEqual(claimStep(record(), true, A), { kind: 'held', claim: { owned: true, epoch: 3 } })
    // Its own room after a restart under the same id: the old start is fenced off by a new epoch.
    assert.deepEqual(claimStep(record(), false, { serverId: 'a', boot: 'boot-2' }), {
      kind: 'take',
      epoch: 4,
      expected: 3,
    })
  })
})
