import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BROADCAST_PARAM, SYNC_STATUS_PARAM } from '@symphony/client/wire'
import { capabilitiesFrom } from '../../../src/protocol/capabilities.js'

describe('protocol extensions a client declares', () => {
  it('reads each extension from its query parameter, and only from `=1`', () => {
    const query = new URLSearchParams({ [SYNC_STATUS_PARAM]: '1', [BROADCAST_PARAM]: 'yes' })
    assert.deepEqual([...capabilitiesFrom(query)], ['sync-status'])
    query.set(BROADCAST_PARAM, '1')
    assert.deepEqual([...capabilitiesFrom(query)].sort(), ['events', 'sync-status'])
  })

  it('gives a plain provider, which declares nothing, no extension', () => {
    assert.equal(capabilitiesFrom(new URLSearchParams('room=a')).size, 0)
  })
})
