import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ChannelPeers } from '../../src/adapters/channel-peers.js'

describe('ChannelPeers', () => {
  it('holds a channel alone once Redis counts only its sender, and shares it again on hearing a peer', () => {
    const peers = new ChannelPeers()
    peers.track('r')
    assert.equal(peers.isAlone('r'), false, 'unknown until a reply says')
    peers.replied(peers.sent('r'), 1)
    assert.equal(peers.isAlone('r'), true)
    peers.heard('r')
    assert.equal(peers.isAlone('r'), false)
    peers.replied(peers.sent('r'), 2)
    assert.equal(peers.isAlone('r'), false)
  })

  it('ignores a reply older than a peer heard since, than a reconnection, or than the subscription', () => {
    const peers = new ChannelPeers()
    peers.track('r')
    const beforeHeard = peers.sent('r')
    peers.heard('r') // the peer's announcement came in before the reply to an earlier publish
    peers.replied(beforeHeard, 1)
    assert.equal(peers.isAlone('r'), false, 'the peer joined after Redis counted')

    const beforeReconnect = peers.sent('r')
    peers.forgetReplies()
    peers.replied(beforeReconnect, 1)
    assert.equal(peers.isAlone('r'), false, 'what the subscriber missed while away is unknown')

    const beforeResubscribe = peers.sent('r')
    peers.forget('r')
    peers.track('r') // unloaded and loaded again
    peers.replied(beforeResubscribe, 1)
    assert.equal(peers.isAlone('r'), false, 'the new subscription waits for a reply of its own')
  })

  it('never holds alone a channel it does not track', () => {
    const peers = new ChannelPeers()
    peers.replied(peers.sent('r'), 1)
    assert.equal(peers.isAlone('r'), false)
  })
})
