import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { AUTH_FAILED, closeAnswer, httpAnswer } from '../../src/error-answers.js'
import {
  AuthError,
  DocumentTooLargeError,
  MessageTooBigError,
  PendingLimitError,
  ProtocolError,
  RoomDeletedError,
  ServerBusyError,
  SnapshotConflictError,
  SnapshotsUnavailableError,
  SnapshotVersionNotFoundError,
  VersionNotRestorableError,
} from '../../src/errors.js'

describe('one table answers an error on a WebSocket and over HTTP', () => {
  it('gives a refused update the same meaning on both: the close code and the HTTP code agree', () => {
    const cases = [
      [new ProtocolError('p'), CloseCode.ProtocolError, 400, 'UPDATE_INVALID'],
      [new DocumentTooLargeError('d'), CloseCode.DocumentTooLarge, 413, 'DOCUMENT_TOO_LARGE'],
      [new MessageTooBigError('m'), CloseCode.MessageTooBig, 413, 'UPDATE_TOO_LARGE'],
      [new PendingLimitError('w'), CloseCode.TooMuchPending, 422, 'UPDATE_WAITS_TOO_MUCH'],
      [new ServerBusyError('b'), CloseCode.TryAgainLater, 503, 'SERVER_BUSY'],
    ] as const
    for (const [error, close, status, code] of cases) {
      assert.deepEqual(closeAnswer(error), { code: close, reason: error.message })
      assert.deepEqual(httpAnswer(error), { status, code, message: error.message })
    }
  })

  it('answers the versions errors over HTTP with their own status', () => {
    assert.equal(httpAnswer(new SnapshotVersionNotFoundError('n')).status, 404)
    assert.equal(httpAnswer(new VersionNotRestorableError('r')).status, 409)
    assert.equal(httpAnswer(new SnapshotsUnavailableError('u')).status, 503)
    assert.equal(httpAnswer(new RoomDeletedError('a restore met the deletion')).status, 410)
  })

  it("hides the message of the server's own failures, and of any error that is not Symphony's", () => {
    for (const error of [new Error('secret path'), new SnapshotConflictError('secret')]) {
      assert.deepEqual(closeAnswer(error), { code: CloseCode.InternalError, reason: 'internal error' })
      assert.deepEqual(httpAnswer(error), { status: 500, code: 'INTERNAL_ERROR', message: 'internal error' })
      assert.deepEqual(httpAnswer(error, AUTH_FAILED), { status: 500, ...AUTH_FAILED })
    }
  })

  it("keeps a token error's status and Retry-After", () => {
    const answer = httpAnswer(new AuthError('AUTH_UNAVAILABLE', 503, 'keys unreachable', 7), AUTH_FAILED)
    assert.deepEqual(answer, {
      status: 503,
      code: 'AUTH_UNAVAILABLE',
      message: 'keys unreachable',
      retryAfterSeconds: 7,
    })
    assert.equal(httpAnswer(new AuthError('ROOM_FORBIDDEN', 403, 'no')).status, 403)
  })
})
