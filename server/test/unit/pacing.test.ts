import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BuildPace, RetryLater, roomKey, userKey } from '../../src/core/pacing.js'

const MB = 1_000_000

describe('BuildPace', () => {
  it('lets a writer build its burst at once, then makes it wait what it owes past it at its rate', () => {
    const pace = new BuildPace(10 * MB, 30 * MB)
    const t = performance.now()
    assert.equal(pace.built('ada', 20 * MB, t), 0)
    assert.equal(pace.built('ada', 10 * MB, t), 0, 'the burst, whole')
    assert.equal(pace.built('ada', 5 * MB, t), 500, '5 MB past it, at 10 MB/s')
    // Half a second later, 5 MB is paid: 5 MB more owes as much again.
    assert.equal(pace.built('ada', 5 * MB, t + 500), 500)
    // Others are not held back by her debt.
    assert.equal(pace.built('bob', 1 * MB, t + 500), 0)
  })

  it('forgets a debt once it is paid, and counts small edits as they come', () => {
    const pace = new BuildPace(10 * MB, 30 * MB)
    const t = performance.now()
    assert.equal(pace.built('ada', 40 * MB, t), 1_000)
    assert.equal(pace.built('ada', 1 * MB, t + 4_000), 0, 'paid off after 4 s')
    let waited = 0
    for (let edit = 0; edit < 100_000; edit++) waited += pace.built('typist', 300, t + edit)
    assert.equal(waited, 0, 'a hundred thousand edits of 300 bytes, one a millisecond, never wait')
  })
})

describe('RetryLater', () => {
  it('turns a refused key away for a second, twice as long each time it is refused again while remembered', () => {
    const waits = new RetryLater()
    const t = performance.now()
    const ada = userKey('user:ada', 'doc')
    assert.equal(waits.secondsLeft(ada, t), 0)
    waits.refused(ada, t)
    assert.equal(waits.secondsLeft(ada, t), 1)
    assert.equal(waits.secondsLeft(userKey('user:bob', 'doc'), t), 0, 'another user in the room')
    assert.equal(waits.secondsLeft(roomKey('doc'), t), 0, 'the room itself')
    assert.equal(waits.secondsLeft(ada, t + 1_000), 0, 'the wait is over')
    waits.refused(ada, t + 1_000)
    assert.equal(waits.secondsLeft(ada, t + 1_000), 2)
    for (let i = 0; i < 5; i++) waits.refused(ada, t + 1_000)
    assert.equal(waits.secondsLeft(ada, t + 1_000), 8, 'at most 8 s')
  })
})
