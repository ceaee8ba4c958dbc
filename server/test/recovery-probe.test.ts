import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RecoveryProbe } from '../src/adapters/recovery-probe.js'
import { eventually } from './helpers/clients.js'

/** A probe whose answers the test gives, one pending call at a time. */
function controlledProbe() {
  const calls: { resolve(): void; reject(error: Error): void }[] = []
  const outcomes: string[] = []
  const probe = new RecoveryProbe(
    5,
    () => new Promise<void>((resolve, reject) => calls.push({ resolve, reject })),
    () => outcomes.push('answered'),
    (error) => outcomes.push(`failed: ${(error as Error).message}`),
  )
  return { probe, calls, outcomes }
}

describe('the recovery probe', () => {
  it('asks one probe at a time: a slow one is not overlapped by the next', async () => {
    const { probe, calls, outcomes } = controlledProbe()
    probe.start()
    await eventually(() => calls.length === 1, 'probe 1 asked')
    // Many intervals pass while the first probe hangs (a DynamoDB call retrying for 15 s).
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.equal(calls.length, 1, 'no second probe while one is in flight')
    calls[0]?.reject(new Error('timeout'))
    await eventually(() => calls.length === 2, 'probe 2 asked')
    calls[1]?.resolve()
    await eventually(() => outcomes.join() === 'failed: timeout,answered', 'failure then answer')
    await new Promise((resolve) => setTimeout(resolve, 30))
    assert.equal(calls.length, 2, 'stopped once answered')
  })

  it('ignores a slow probe that answers after the dependency recovered', async () => {
    const { probe, calls, outcomes } = controlledProbe()
    probe.start()
    await eventually(() => calls.length === 1, 'probe 1 asked')
    probe.stop() // the dependency answered a real call meanwhile
    probe.start() // and failed again
    await eventually(() => calls.length === 2, 'probe 2 asked')
    calls[1]?.resolve()
    await eventually(() => outcomes.join() === 'answered', 'answered')
    calls[0]?.reject(new Error('timeout')) // the first, stale probe gives up at last
    await new Promise((resolve) => setTimeout(resolve, 30))
    assert.deepEqual(outcomes, ['answered'], 'a stale failure does not mark the dependency failing')
    assert.equal(calls.length, 2)
  })
})
