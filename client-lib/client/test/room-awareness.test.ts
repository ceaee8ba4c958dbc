import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { createClient } from '@symphony/client'
import { eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { startTestServer, stopTestServers } from '@symphony/test-helpers/test-server'

afterEach(async () => {
  await destroyNodeClients()
  await stopTestServers()
})

type Editor = { user?: { name: string }; cursor?: { anchor: number } | null; blob?: string }

/** A `blob` that makes `state` exactly `bytes` of JSON in UTF-8, mostly of two-byte characters. */
function blobFor(state: Editor | null, bytes: number): string {
  const rest = bytes - new TextEncoder().encode(JSON.stringify({ ...state, blob: '' })).length
  return 'é'.repeat(Math.floor(rest / 2)) + 'x'.repeat(rest % 2)
}

describe('room.awareness', () => {
  it('is the awareness presence reads and writes: a binding’s fields reach the others’ presence', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('awareness')
    const a = nodeClient(t.wsUrl).enter<Editor>(name)
    const b = nodeClient(t.wsUrl).enter<Editor>(name)
    assert.equal(a.awareness.clientID, a.doc.clientID)
    assert.equal(a.awareness.doc, a.doc)
    // What y-codemirror.next and Tiptap's CollaborationCaret do with it.
    a.awareness.setLocalStateField('user', { name: 'Ada' })
    a.awareness.setLocalStateField('cursor', { anchor: 3 })
    a.presence.set({ cursor: { anchor: 4 } }) // presence merges, keeping the binding's user
    assert.deepEqual(a.awareness.getLocalState(), { user: { name: 'Ada' }, cursor: { anchor: 4 } })
    await eventually(() => b.presence.others()[0]?.cursor?.anchor === 4, 'b sees a’s cursor')
    assert.deepEqual(b.presence.others(), [
      { clientId: a.doc.clientID, user: { name: 'Ada' }, cursor: { anchor: 4 } },
    ])
    assert.deepEqual(b.awareness.getStates().get(a.awareness.clientID), a.awareness.getLocalState())
  })

  it('never sends a state the server would close the connection for, and sends one exactly at the limit', async () => {
    const maxPresenceBytes = 1_024
    const t = await startTestServer({ limits: { maxPresenceBytes } })
    const name = uniqueRoom('awareness-limit')
    const a = nodeClient(t.wsUrl, { maxPresenceBytes }).enter<Editor>(name)
    const b = nodeClient(t.wsUrl).enter<Editor>(name)
    const errors = recordErrors(a)
    await Promise.all([a.whenSynced(), b.whenSynced()])
    a.presence.set({ user: { name: 'Ada' } })
    a.awareness.setLocalStateField('blob', blobFor(a.presence.get(), maxPresenceBytes + 1))
    a.awareness.setLocalStateField('blob', blobFor(a.presence.get(), maxPresenceBytes + 2))
    assert.deepEqual(a.presence.get(), { user: { name: 'Ada' } }, 'the previous state stays')
    assert.deepEqual(
      errors.map((e) => e.code),
      ['PRESENCE_TOO_BIG'],
      'reported once until a state fits',
    )
    assert.match(errors[0]?.message ?? '', /1025 bytes of JSON, over the server's 1024/)
    const fits = blobFor(a.presence.get(), maxPresenceBytes) // 'é' is two bytes in UTF-8, as the server counts
    a.awareness.setLocalStateField('blob', fits)
    await eventually(() => b.presence.others()[0]?.blob === fits, 'b gets the state of exactly 1024 bytes')
    a.presence.set({ blob: `${fits}!` })
    assert.equal(errors.length, 2, 'a refusal after a state that fit is reported again')
    a.presence.set({ blob: 'small', cursor: { anchor: 7 } })
    await eventually(() => b.presence.others()[0]?.cursor?.anchor === 7, 'b sees the next state that fits')
    assert.equal(a.status, 'synced', 'still connected')
    assert.deepEqual(
      errors.map((e) => e.code),
      ['PRESENCE_TOO_BIG', 'PRESENCE_TOO_BIG'],
      'the server never closed it',
    )
  })

  it('speaks to the server for its own client id only, not for the other tabs it hears', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('awareness-tabs')
    const a = nodeClient(t.wsUrl, { crossTab: true }).enter<Editor>(name)
    const errors = recordErrors(a)
    await a.whenSynced()
    // Nine tabs of this browser that never reach the server (their token never comes), but share
    // their presence with the connected one: the server lets a connection introduce eight ids.
    const never = () => new Promise<string>(() => {})
    const tabs = Array.from({ length: 9 }, () =>
      nodeClient(t.wsUrl, { crossTab: true, getToken: never }).enter<Editor>(name),
    )
    for (const [i, tab] of tabs.entries()) tab.presence.set({ user: { name: `tab ${i}` } })
    await eventually(() => a.presence.others().length === 9, 'a hears every tab')
    const b = nodeClient(t.wsUrl).enter<Editor>(name)
    a.presence.set({ cursor: { anchor: 1 } }) // after the tabs' states on a's socket, if it sent them
    await eventually(() => b.presence.others().some((peer) => peer.cursor?.anchor === 1), 'b hears a')
    assert.deepEqual(
      b.presence.others().map((peer) => peer.clientId),
      [a.awareness.clientID],
      'only a’s own presence reached the server',
    )
    assert.deepEqual(errors, [])
    assert.equal(a.status, 'synced')
  })

  it('takes maxPresenceBytes as a positive whole number', () => {
    for (const maxPresenceBytes of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => createClient({ url: 'ws://localhost:1', maxPresenceBytes }), RangeError)
    }
  })
})
