import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, MESSAGE_BROADCAST } from '@symphony/client/wire'
import * as encoding from 'lib0/encoding'
import {
  connectClient,
  destroyClients,
  eventually,
  uniqueRoom,
} from '../../../server/test/helpers/clients.js'
import { closed, openRaw } from '../../../server/test/helpers/raw-socket.js'
import {
  startTestCluster,
  startTestServer,
  stopTestServers,
} from '../../../server/test/helpers/test-server.js'
import { destroyNodeClients, nodeClient } from './helpers/node-client.js'

afterEach(async () => {
  destroyClients()
  await destroyNodeClients()
  await stopTestServers()
})

function eventFrame(text: string): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MESSAGE_BROADCAST)
  encoding.writeVarUint8Array(encoder, new TextEncoder().encode(text))
  return encoding.toUint8Array(encoder)
}

describe('broadcast events', () => {
  it('reach everyone else in the room, on every server, and never a plain y-websocket provider', async () => {
    const [a, b] = await startTestCluster()
    const room = uniqueRoom('events')
    const [ada, bob, cy] = [
      nodeClient(a.wsUrl).enter(room),
      nodeClient(b.wsUrl).enter(room),
      nodeClient(a.wsUrl).enter(room),
    ]
    await Promise.all([ada.whenSynced(), bob.whenSynced(), cy.whenSynced()])
    const plain = connectClient(a.wsUrl, room)
    const seenByPlain: number[] = []
    const handlers = plain.provider.messageHandlers
    const original = handlers[MESSAGE_BROADCAST]
    handlers[MESSAGE_BROADCAST] = (...args) => {
      seenByPlain.push(MESSAGE_BROADCAST)
      original?.(...args)
    }
    await eventually(() => plain.provider.synced, 'the provider syncs')
    const heard = { ada: [] as unknown[], bob: [] as unknown[], cy: [] as unknown[] }
    ada.on('event', (data) => heard.ada.push(data))
    bob.on('event', (data) => heard.bob.push(data))
    cy.on('event', (data) => heard.cy.push(data))
    assert.equal(ada.broadcast({ type: 'emoji', emoji: '🎉' }), true)
    await eventually(
      () => heard.bob.length === 1 && heard.cy.length === 1,
      'bob (other server) and cy hear it',
    )
    assert.deepEqual(heard.bob, [{ type: 'emoji', emoji: '🎉' }])
    assert.deepEqual(heard.ada, [], 'not echoed to the sender')
    // Sent after the event on the same socket: once bob has this edit, he has had everything before.
    ada.map('m').set('after', 1)
    await eventually(() => bob.map('m').get('after') === 1, 'a later edit arrives')
    await eventually(() => plain.doc.getMap('m').get('after') === 1, 'the plain provider gets the edit')
    assert.deepEqual(seenByPlain, [], 'but never the event')
    assert.equal(a.server.manager.loadedRoom(room)?.doc.share.has('emoji'), false, 'nothing stored')
  })

  it('refuses events that are too big (1009) or not JSON (1002), closing only the sender', async () => {
    const t = await startTestServer({ limits: { maxPresenceBytes: 1_024 } })
    const room = uniqueRoom('bad-events')
    for (const [text, code] of [
      [JSON.stringify({ x: 'y'.repeat(2_000) }), CloseCode.MessageTooBig],
      ['{not json', CloseCode.ProtocolError],
      [`${'['.repeat(100)}${']'.repeat(100)}`, CloseCode.ProtocolError],
    ] as const) {
      const socket = await openRaw(`${t.wsUrl}/${room}?broadcast=1`)
      const gone = closed(socket)
      socket.send(eventFrame(text))
      assert.equal((await gone).code, code, text.slice(0, 20))
    }
    const ok = nodeClient(t.wsUrl).enter(room)
    await ok.whenSynced()
    assert.equal(ok.broadcast({ fine: true }), true)
  })
})
