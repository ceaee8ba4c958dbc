import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Histogram, Registry } from 'prom-client'
import { HotHistogram } from '../../src/hot-histogram.js'
import { LatencyWindow } from '../../src/latency-window.js'
import { ServerMetrics } from '../../src/metrics.js'

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

describe('HotHistogram', () => {
  it('exports exactly what a prom-client histogram of the same observations does', async () => {
    const buckets = [0.0001, 0.001, 0.01, 0.1, 1]
    const [ours, theirs] = [new Registry(), new Registry()]
    const hot = new HotHistogram('h_seconds', 'help', buckets, ours)
    const reference = new Histogram({ name: 'h_seconds', help: 'help', buckets, registers: [theirs] })
    for (const value of [0, 0.00005, 0.0001, 0.0004, 0.001, 0.05, 0.1, 0.7, 1, 3, 12]) {
      hot.observe(value)
      reference.observe(value)
    }
    assert.equal(await ours.metrics(), await theirs.metrics())
  })
})

describe('LatencyWindow', () => {
  it('gives the p99 of the last 60 s only, and 0 when nothing arrived in them', () => {
    const window = new LatencyWindow()
    for (let i = 1; i <= 100; i++) window.record(i / 1000, 1_000) // 1..100 ms at t = 1 s
    assert.equal(window.quantile(0.99, 1_000), 0.099)
    window.record(5, 30_000) // one slow update later
    assert.equal(window.quantile(0.99, 30_000), 0.1)
    assert.equal(window.quantile(0.99, 61_500), 5, 'only the slow one is still in the window')
    assert.equal(window.quantile(0.99, 90_001), 0)
  })
})
