import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, decodeEventSender, type EventSender, MESSAGE_BROADCAST } from '@symphony/client/wire'
import { connectClient, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { closed, collect, openRaw, terminateRawSockets } from '@symphony/test-helpers/raw-socket'
import { startTestCluster, startTestServer, stopTestServers } from '@symphony/test-helpers/test-server'
import { signToken, TEST_SECRET } from '@symphony/test-helpers/tokens'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'

afterEach(async () => {
  destroyClients()
  terminateRawSockets()
  await destroyNodeClients()
  await stopTestServers()
})

const AUTH = { auth: { mode: 'jwt', secret: TEST_SECRET } } as const

/** An event as a raw socket receives it: the payload, then the sender the server stamped. */
function readRelayed(frame: Uint8Array): { data: unknown; from: EventSender | null } {
  const decoder = decoding.createDecoder(frame)
  assert.equal(decoding.readVarUint(decoder), MESSAGE_BROADCAST)
  const data = JSON.parse(new TextDecoder().decode(decoding.readVarUint8Array(decoder)))
  return { data, from: decodeEventSender(decoding.readVarString(decoder)) }
}

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
    const senders: (EventSender | null)[] = []
    ada.on('event', (data) => heard.ada.push(data))
    bob.on('event', (data, from) => {
      heard.bob.push(data)
      senders.push(from)
    })
    cy.on('event', (data) => heard.cy.push(data))
    assert.equal(ada.broadcast({ type: 'emoji', emoji: '🎉' }), true)
    await eventually(
      () => heard.bob.length === 1 && heard.cy.length === 1,
      'bob (other server) and cy hear it',
    )
    assert.deepEqual(heard.bob, [{ type: 'emoji', emoji: '🎉' }])
    assert.equal(senders[0]?.userId, 'anonymous', 'AUTH=none: every sender is anonymous')
    assert.match(senders[0]?.connectionId ?? '', /^a:/, "a connection of ada's server")
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

  it('names the sender as its token says, across servers, whatever the payload claims', async () => {
    const [a, b] = await startTestCluster(AUTH)
    const room = uniqueRoom('who-sent')
    const token = (sub: string, name: string) => signToken({ room, access: 'rw', sub, name })
    const ada = nodeClient(a.wsUrl, { token: await token('u-ada', 'Ada') }).enter(room)
    const bob = nodeClient(b.wsUrl, { token: await token('u-bob', 'Bob') }).enter(room)
    await Promise.all([ada.whenSynced(), bob.whenSynced()])
    const onA = await openRaw(`${a.wsUrl}/${room}?broadcast=1&token=${await token('u-cy', 'Cy')}`)
    const rawHeard = collect(onA)
    const heard: { data: unknown; from: EventSender | null }[] = []
    bob.on('event', (data, from) => heard.push({ data, from }))
    // Ada claims, in her payload, to be Eve: only the payload says so.
    const claim = { type: 'approved', from: { connectionId: 'b:1', userId: 'u-eve', name: 'Eve' } }
    assert.equal(ada.broadcast(claim), true)
    await eventually(() => heard.length === 1, 'bob, on the other server, hears it')
    const [event] = heard
    assert.deepEqual(event?.data, claim, 'the payload is relayed as it was sent')
    assert.equal(event?.from?.userId, 'u-ada')
    assert.equal(event?.from?.name, 'Ada')
    assert.match(event?.from?.connectionId ?? '', /^a:/, 'stamped by the server ada is on')
    await eventually(() => rawHeard.some((f) => f[0] === MESSAGE_BROADCAST), 'the raw client hears it')
    const raw = readRelayed(rawHeard.find((f) => f[0] === MESSAGE_BROADCAST) as Uint8Array)
    assert.deepEqual(raw, { data: claim, from: event?.from }, 'the same sender on both servers')

    // A client that appends a sender of its own to its frame is refused, and nobody hears it.
    const forged = encoding.createEncoder()
    encoding.writeVarUint(forged, MESSAGE_BROADCAST)
    encoding.writeVarUint8Array(forged, new TextEncoder().encode('{"type":"approved"}'))
    encoding.writeVarString(forged, JSON.stringify({ connectionId: 'b:1', userId: 'u-bob', name: 'Bob' }))
    const gone = closed(onA)
    onA.send(encoding.toUint8Array(forged))
    assert.equal((await gone).code, CloseCode.ProtocolError)
    assert.equal(ada.broadcast({ type: 'after' }), true)
    await eventually(() => heard.length === 2, 'a later event arrives')
    assert.deepEqual(heard[1]?.data, { type: 'after' }, 'and the forged one never did')
  })

  it('closes a read-only connection that sends one (4403); nobody hears it', async () => {
    const t = await startTestServer(AUTH)
    const room = uniqueRoom('viewer-events')
    const token = (sub: string, access: 'rw' | 'ro') => signToken({ room, access, sub })
    const editor = nodeClient(t.wsUrl, { token: await token('u-ed', 'rw') }).enter(room)
    await editor.whenSynced()
    const heard: unknown[] = []
    editor.on('event', (data) => heard.push(data))

    const raw = await openRaw(`${t.wsUrl}/${room}?broadcast=1&token=${await token('u-raw', 'ro')}`)
    let closeCode: number | undefined
    void closed(raw).then((event) => {
      closeCode = event.code
    })
    raw.send(eventFrame('{"type":"document-approved"}'))
    await eventually(() => closeCode !== undefined, 'the read-only sender is closed')
    assert.equal(closeCode, CloseCode.ReadOnly)

    // Our client is told, keeps the room (it reconnects and reads), and sends no more events.
    const viewer = nodeClient(t.wsUrl, { token: await token('u-view', 'ro') }).enter(room)
    const errors = recordErrors(viewer)
    await viewer.whenSynced()
    assert.equal(viewer.broadcast({ type: 'document-approved' }), true, 'it does not know yet')
    await eventually(
      () => errors.some((e) => e.code === 'READ_ONLY' && e.details.closeCode === CloseCode.ReadOnly),
      'the viewer is told',
    )
    await eventually(() => viewer.status === 'synced', 'the viewer reconnects')
    assert.equal(viewer.broadcast({ type: 'document-approved' }), false, 'and sends nothing more')
    editor.map('m').set('edit', 1)
    await eventually(() => viewer.map('m').get('edit') === 1, 'the viewer still reads the room')

    // Sent after both refusals: once the editor hears it, it would have heard theirs first.
    const other = nodeClient(t.wsUrl, { token: await token('u-other', 'rw') }).enter(room)
    await other.whenSynced()
    assert.equal(other.broadcast({ type: 'hello' }), true)
    await eventually(() => heard.length > 0, 'the editor hears the writer')
    assert.deepEqual(heard, [{ type: 'hello' }], 'and never the viewers')
  })
})
