import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Sessions } from '../src/sessions.js'

describe('dashboard sessions', () => {
  it('expire after their lifetime, and all end when the token changes', () => {
    let now = 1_000_000
    const sessions = new Sessions('dashboard-token-0123456789', 60_000, () => now)
    const { value, maxAgeMs } = sessions.create()
    assert.equal(maxAgeMs, 60_000)
    assert.equal(sessions.isValid(value), true)
    now += 59_999
    assert.equal(sessions.isValid(value), true)
    now += 1
    assert.equal(sessions.isValid(value), false, 'expired')
    const fresh = sessions.create().value
    assert.equal(new Sessions('another-token-0123456789', 60_000, () => now).isValid(fresh), false)
    const [id, , mac] = fresh.split('.')
    assert.equal(sessions.isValid(`${id}.${now + 10_000_000}.${mac}`), false, 'a stretched expiry')
    assert.equal(sessions.isValid(''), false)
    assert.equal(sessions.isValid('a.b.c.d'), false)
  })
})
