import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { encodeAwarenessEntries } from '../src/protocol/codec.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { closed, openRaw } from './helpers/raw-socket.js'
import { assertAlive, startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

/** An awareness message for client 77 whose state is the bytes `state`. */
const presenceFrame = (state: Uint8Array, clock = 1) =>
  encodeAwarenessEntries([{ clientId: 77, clock, state }])
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const QUERY_AWARENESS = new Uint8Array([3])

describe('presence is bounded and well-formed', () => {
  it('closes with 1009 a client whose presence state passes the limit, and keeps nothing of it', async () => {
    const t = await startTestServer({ limits: { maxPresenceBytes: 4 * 1024 } })
    const room = uniqueRoom()
    const watcher = await connectSynced(t.wsUrl, room)
    const socket = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(socket)
    socket.send(presenceFrame(json({ name: 'fits', pad: 'x'.repeat(3_000) })))
    await eventually(
      () => watcher.provider.awareness.getStates().has(77),
      'a state within the limit is shared',
    )
    socket.send(presenceFrame(json({ pad: 'x'.repeat(5_000) }), 2))
    const close = await gone
    assert.equal(close.code, CloseCode.MessageTooBig)
    assert.match(close.reason, /presence state/)
    await eventually(() => !watcher.provider.awareness.getStates().has(77), 'its presence is removed')
  })

  it('refuses presence that is not UTF-8 JSON (1002) before any client sees it', async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    const watcher = await connectSynced(t.wsUrl, room)
    for (const state of [
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      json('x').slice(1),
    ]) {
      const socket = await openRaw(`${t.wsUrl}/${room}`)
      const gone = closed(socket)
      socket.send(presenceFrame(state))
      assert.equal((await gone).code, CloseCode.ProtocolError)
    }
    // The Node client that would have crashed on invalid UTF-8 is still here and in sync.
    watcher.doc.getText('t').insert(0, 'alive')
    const late = await connectSynced(t.wsUrl, room)
    await eventually(() => late.doc.getText('t').toString() === 'alive', 'still syncing')
    assert.equal(watcher.provider.awareness.getStates().has(77), false)
    await assertAlive(t)
  })

  it('rate-limits presence queries (4002): each answer costs the whole room', async () => {
    const t = await startTestServer()
    const room = uniqueRoom()
    await connectSynced(t.wsUrl, room)
    const socket = await openRaw(`${t.wsUrl}/${room}`)
    const gone = closed(socket)
    for (let i = 0; i < 50 && socket.readyState === socket.OPEN; i++) socket.send(QUERY_AWARENESS)
    assert.equal((await gone).code, CloseCode.RateLimited)
  })
})

describe('presence in a room of many y-websocket providers', () => {
  it('counts only the ids a connection introduced, not the others’ presence its provider sends back', async () => {
    // y-websocket's provider sends back every presence it hears: counted as its own, a room of
    // more than 8 users closed every connection (1002), and one leaving removed everyone's cursor.
    const t = await startTestServer()
    const room = uniqueRoom()
    const users = []
    const closes: number[] = []
    for (let i = 0; i < 12; i++) {
      const user = await connectSynced(t.wsUrl, room)
      if (i < 11) user.provider.on('connection-close', (event) => closes.push(event?.code ?? 0))
      user.provider.awareness.setLocalStateField('user', { n: i })
      users.push(user)
    }
    const first = users[0] as (typeof users)[number]
    await eventually(() => first.provider.awareness.getStates().size === 12, 'everyone sees everyone', 10_000)
    const last = users.pop() as (typeof users)[number]
    last.destroy()
    await eventually(() => first.provider.awareness.getStates().size === 11, 'the one who left is gone')
    // Nobody else's presence went with it (y-protocols drops a state 30 s after its last renewal,
    // so a wrong removal would show at once, not later).
    for (const user of users) assert.equal(user.provider.awareness.getStates().size, 11)
    assert.deepEqual(closes, [], 'no connection was closed')
    assert.ok(users.every((user) => user.provider.wsconnected))
  })
})
