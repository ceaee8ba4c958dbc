import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Report } from '../src/reporting/report-schema.js'
import { judge, parseThreshold } from '../src/reporting/thresholds.js'

const latency = (count: number, ms: number) => ({
  count,
  p50: ms,
  p95: ms,
  p99: ms,
  max: ms,
  mean: ms,
  min: ms,
})

/** The parts of a report the document-latency thresholds read. */
const reportWith = (updates: ReturnType<typeof latency>) =>
  ({ latency: { update: updates, presence: latency(0, 0), connect: latency(4, 3) } }) as unknown as Report

describe('thresholds', () => {
  it('fails a latency threshold when the run measured no sample of it, instead of reading 0 ms', () => {
    const thresholds = ['doc.p99<50', 'doc.count==0'].map(parseThreshold)
    assert.deepEqual(
      judge(thresholds, reportWith(latency(0, 0))).map((v) => [v.expression, v.actual, v.ok]),
      [
        ['doc.p99<50', null, false],
        ['doc.count==0', 0, true],
      ],
    )
    assert.deepEqual(
      judge(thresholds, reportWith(latency(10, 12))).map((v) => [v.actual, v.ok]),
      [
        [12, true],
        [10, false],
      ],
    )
  })
})
