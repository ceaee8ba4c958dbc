import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { Awareness, encodeAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { encodeAwareness, encodeUpdate } from '../src/protocol/codec.js'
import {
  connectClient,
  connectSynced,
  destroyClients,
  eventually,
  synced,
  uniqueRoom,
} from './helpers/clients.js'
import { collect, openRaw, terminateRawSockets } from './helpers/raw-socket.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

describe('sync with y-websocket providers', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(() => t.stop())
  afterEach(() => {
    destroyClients()
    terminateRawSockets()
  })

  it('two clients converge on concurrent edits', async () => {
    const room = uniqueRoom()
    const a = await connectSynced(t.wsUrl, room)
    const b = await connectSynced(t.wsUrl, room)
    a.doc.getText('t').insert(0, 'left ')
    b.doc.getText('t').insert(0, 'right ')
    a.doc.getMap('m').set('a', 1)
    b.doc.getMap('m').set('b', 2)
    await eventually(
      () =>
        a.doc.getText('t').length === 11 && b.doc.getText('t').length === 11 && b.doc.getMap('m').size === 2,
      'both edits reach both clients',
    )
    assert.equal(a.doc.getText('t').toString(), b.doc.getText('t').toString())
    assert.deepEqual(a.doc.getMap('m').toJSON(), { a: 1, b: 2 })
    assert.deepEqual(Y.encodeStateVector(a.doc), Y.encodeStateVector(b.doc))
    a.destroy()
    b.destroy()
  })

  it('a late joiner receives the full state', async () => {
    const room = uniqueRoom()
    const a = await connectSynced(t.wsUrl, room)
    for (let i = 0; i < 50; i++) a.doc.getArray<number>('list').push([i])
    const late = connectClient(t.wsUrl, room)
    await synced(late)
    await eventually(() => late.doc.getArray('list').length === 50, 'the late joiner has all 50 items')
    assert.deepEqual(late.doc.getArray('list').toJSON(), a.doc.getArray('list').toJSON())
    a.destroy()
    late.destroy()
  })

  it('presence appears on the other client and disappears when its owner disconnects', async () => {
    const room = uniqueRoom()
    const a = await connectSynced(t.wsUrl, room)
    const b = await connectSynced(t.wsUrl, room)
    a.provider.awareness.setLocalStateField('cursor', { x: 1, y: 2 })
    const aId = a.doc.clientID
    await eventually(() => b.provider.awareness.getStates().get(aId)?.cursor?.x === 1, "B sees A's cursor")
    const c = await connectSynced(t.wsUrl, room)
    await eventually(() => c.provider.awareness.getStates().has(aId), 'a late joiner sees present users')
    // Close A's socket without a goodbye: the server must remove A's presence itself.
    a.provider.shouldConnect = false
    a.provider.ws?.close()
    await eventually(() => !b.provider.awareness.getStates().has(aId), "A's cursor leaves B")
    await eventually(() => !c.provider.awareness.getStates().has(aId), "A's cursor leaves C")
    for (const client of [a, b, c]) client.destroy()
  })

  it('returns awareness to its sender, so a client alone in a room keeps hearing from the server', async () => {
    const room = uniqueRoom()
    const alone = await openRaw(`${t.wsUrl}/${room}`)
    const received = collect(alone)
    await eventually(() => t.server.manager.loadedRoom(room)?.connections.size === 1, 'joined')
    const awareness = new Awareness(new Y.Doc())
    awareness.setLocalState({ cursor: 1 })
    const frame = encodeAwareness(encodeAwarenessUpdate(awareness, [awareness.clientID]))
    // y-websocket's provider renews this every 15 s and drops a connection silent for 30 s.
    alone.send(frame)
    await eventually(() => received.some((m) => Buffer.compare(m, frame) === 0), 'the renewal comes back')
    awareness.destroy()
    alone.close()
  })

  it('forwards an update as the same bytes to other clients and never echoes it to the sender', async () => {
    const room = uniqueRoom()
    const sender = await openRaw(`${t.wsUrl}/${room}`)
    const receiver = await openRaw(`${t.wsUrl}/${room}`)
    const atSender = collect(sender)
    const atReceiver = collect(receiver)
    const source = new Y.Doc()
    source.getText('t').insert(0, 'exact bytes')
    const frame = encodeUpdate(Y.encodeStateAsUpdate(source))
    await eventually(() => t.server.manager.loadedRoom(room)?.connections.size === 2, 'both joined')
    const before = atSender.length
    sender.send(frame)
    await eventually(
      () => atReceiver.some((m) => Buffer.compare(m, frame) === 0),
      'the receiver gets the frame',
    )
    // A marker round trip proves the server has handled everything the sender sent before it.
    const marker = encodeUpdate(Y.encodeStateAsUpdate(new Y.Doc()))
    receiver.send(new Uint8Array([3])) // query awareness from the other side
    sender.send(marker)
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'exact bytes',
      'applied',
    )
    assert.equal(
      atSender.slice(before).filter((m) => Buffer.compare(m, frame) === 0).length,
      0,
      'no echo to the sender',
    )
    sender.close()
    receiver.close()
  })
})
