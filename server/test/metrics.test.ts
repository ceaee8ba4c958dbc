import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ServerMetrics } from '../src/metrics.js'

describe('symphony_storage_full', () => {
  it('stays 1 while any room cannot write for lack of space, whatever other rooms manage', async () => {
    const metrics = new ServerMetrics()
    const gauge = async () =>
      (await metrics.storageFull.get()).values.find((v) => v.labels.store === 'snapshots')?.value ?? 0
    metrics.outOfSpace('snapshots', 'big', true)
    assert.equal(await gauge(), 1)
    metrics.outOfSpace('snapshots', 'small', false) // a small room's save fits: the disk is still full
    assert.equal(await gauge(), 1)
    metrics.outOfSpace('snapshots', 'big', false)
    assert.equal(await gauge(), 0)
  })
})
