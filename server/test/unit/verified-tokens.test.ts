import assert from 'node:assert/strict'
import { afterEach, describe, it, mock } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createAuthenticator } from '../../src/auth/authenticator.js'
import { AuthError } from '../../src/errors.js'
import { signToken, TEST_SECRET } from '../helpers/tokens.js'

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => assert.fail('the token was accepted'),
    (error: unknown) => {
      assert.ok(error instanceof AuthError)
      return { code: error.code, message: error.message }
    },
  )

describe('verified tokens', () => {
  afterEach(() => mock.restoreAll())

  it('verify a token once: its next connections cost no signature check, and each room is still checked', async () => {
    const auth = createAuthenticator({ mode: 'jwt', secret: TEST_SECRET })
    const verify = mock.method(crypto.subtle, 'verify')
    const token = await signToken({ room: 'team-a:*', access: 'rw', sub: 'ada' })
    for (let i = 0; i < 5; i++)
      assert.equal((await auth.authenticate(token, `team-a:doc-${i}`)).userId, 'ada')
    assert.equal(verify.mock.callCount(), 1)
    assert.deepEqual(await refusal(auth.authenticate(token, 'team-b:doc')), {
      code: 'ROOM_FORBIDDEN',
      message: 'the token does not grant room "team-b:doc"',
    })
    // A token whose signature does not verify is never taken on trust, however often it comes.
    const forged = `${token.slice(0, -4)}AAAA`
    for (let i = 0; i < 3; i++)
      assert.equal((await refusal(auth.authenticate(forged, 'team-a:doc'))).code, 'TOKEN_INVALID')
    assert.equal(verify.mock.callCount(), 4)
  })

  it('trust a verified token no longer than it is valid', async () => {
    const auth = createAuthenticator({ mode: 'jwt', secret: TEST_SECRET })
    const exp = Math.floor(Date.now() / 1000) + 2
    const token = await signToken({ room: 'r', access: 'rw', exp })
    assert.equal((await auth.authenticate(token, 'r')).access, 'rw')
    while (Date.now() < exp * 1000) await sleep(exp * 1000 - Date.now()) // the clock reaching `exp` is the event
    assert.deepEqual(await refusal(auth.authenticate(token, 'r')), {
      code: 'TOKEN_INVALID',
      message: 'the token has expired',
    })
  })
})
