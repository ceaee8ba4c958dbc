import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MESSAGE_APP, parseAppReply, parseAppRequest } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { decodeMessage, encodeAppReply } from '../../../src/protocol/codec.js'

function appFrame(text: string): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MESSAGE_APP)
  encoding.writeVarUint8Array(encoder, new TextEncoder().encode(text))
  return encoding.toUint8Array(encoder)
}

describe('app messages on the wire', () => {
  it("reads a client's request as one app message, and its { id, type, data }", () => {
    const message = decodeMessage(appFrame('{"id":3,"type":"comment.add","data":{"text":"hi"}}'))
    assert.equal(message.kind, 'app')
    const text = new TextDecoder().decode((message as { payload: Uint8Array }).payload)
    assert.deepEqual(parseAppRequest(text), { id: 3, type: 'comment.add', data: { text: 'hi' } })
    assert.deepEqual(parseAppRequest('{"id":1,"type":"t"}'), { id: 1, type: 't', data: null })
  })

  it('refuses what is no request: no id, a fractional id, no type, not an object, not JSON', () => {
    for (const text of ['{"type":"t"}', '{"id":1.5,"type":"t"}', '{"id":1}', '[1]', 'null', '{']) {
      assert.equal(parseAppRequest(text), null, text)
    }
  })

  it('encodes a reply the client reads back, an answer or an error', () => {
    for (const reply of [
      { id: 7, data: { ok: true } },
      { id: 8, error: { code: 'MESSAGE_REFUSED' as const, message: 'no' } },
    ]) {
      const decoder = decoding.createDecoder(encodeAppReply(reply))
      assert.equal(decoding.readVarUint(decoder), MESSAGE_APP)
      assert.deepEqual(parseAppReply(new TextDecoder().decode(decoding.readVarUint8Array(decoder))), reply)
    }
    assert.equal(parseAppReply('{"id":1,"error":{"code":1}}'), null, 'an error without its code and message')
  })
})
