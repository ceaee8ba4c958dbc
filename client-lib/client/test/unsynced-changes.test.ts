import assert from 'node:assert/strict'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import type { Room } from '@symphony/client'
import { MESSAGE_SYNC_STATUS } from '@symphony/client/wire'
import { connectClient, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { GatedJournal } from '@symphony/test-helpers/controlled-journal'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { TcpLink } from '@symphony/test-helpers/tcp-link'
import { startTestServer, stopTestServers } from '@symphony/test-helpers/test-server'
import { signToken, TEST_SECRET } from '@symphony/test-helpers/tokens'
import { FileUpdateJournal } from '../../../server/src/adapters/file-update-journal.js'

afterEach(async () => {
  destroyClients()
  await destroyNodeClients()
  await stopTestServers()
})

function recordUnsynced(room: Room): boolean[] {
  const events: boolean[] = []
  room.on('unsynced', (unsynced) => events.push(unsynced))
  return events
}

describe('room.hasUnsyncedChanges() against a real server', () => {
  it('is true from a local edit until the server holds it, and a fresh client then sees it', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('unsynced')
    const room = nodeClient(t.wsUrl).enter(name)
    await room.whenSynced()
    assert.equal(room.hasUnsyncedChanges(), false, 'nothing to send yet')
    const events = recordUnsynced(room)
    room.list<string>('todos').push(['milk'])
    room.list<string>('todos').push(['eggs'])
    assert.equal(room.hasUnsyncedChanges(), true)
    await eventually(() => !room.hasUnsyncedChanges(), 'the server acknowledges')
    assert.deepEqual(events, [true, false], 'one change of state each way, not one per edit')
    const late = nodeClient(t.wsUrl).enter(name)
    await late.whenSynced()
    assert.deepEqual(late.list('todos').toArray(), ['milk', 'eggs'])
  })

  it('covers a big update the server applies in slices: acknowledged only once it is all applied', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('unsynced-big')
    const room = nodeClient(t.wsUrl).enter(name)
    await room.whenSynced()
    const big = 'x'.repeat(600_000) // above the server's slicing threshold
    room.text('t').insert(0, big)
    await eventually(() => !room.hasUnsyncedChanges(), 'the big update is acknowledged', 20_000)
    const late = nodeClient(t.wsUrl).enter(name)
    await late.whenSynced()
    assert.equal(late.text('t').length, big.length)
  })

  it('waits for the journal: no acknowledgement while the append is pending', async () => {
    const journal = new GatedJournal(
      new FileUpdateJournal(await mkdtemp(join(tmpdir(), 'symphony-journal-'))),
    )
    const t = await startTestServer({ adapters: { journal } })
    const room = nodeClient(t.wsUrl).enter(uniqueRoom('unsynced-journal'))
    await room.whenSynced()
    const peer = nodeClient(t.wsUrl).enter(room.id)
    await peer.whenSynced()
    try {
      room.map('m').set('k', 1)
      // The peer gets the update the moment the server applies it, before the journal write.
      await eventually(() => peer.map('m').get('k') === 1, 'the update is applied and forwarded')
      await eventually(() => journal.appendsStarted > 0, 'the journal append began')
      // A round trip after the request: an answer to it would reach the room before the reply.
      room.presence.set({ probe: 1 })
      await eventually(() => peer.presence.others().some((o) => o.probe === 1), 'the probe arrives')
      peer.presence.set({ reply: 1 })
      await eventually(() => room.presence.others().some((o) => o.reply === 1), 'the reply arrives')
      assert.equal(room.hasUnsyncedChanges(), true, 'not acknowledged before the journal holds it')
    } finally {
      journal.openGate() // else the server's shutdown waits on it forever
    }
    await eventually(() => !room.hasUnsyncedChanges(), 'acknowledged once journaled')
  })

  it('stays true while the server is unreachable and clears after the reconnect uploads the edits', async () => {
    const t = await startTestServer()
    const link = await TcpLink.open(t.server.port)
    const name = uniqueRoom('unsynced-offline')
    const room = nodeClient(`ws://127.0.0.1:${link.port}`).enter(name)
    await room.whenSynced()
    link.cut()
    await eventually(() => room.status === 'offline', 'the room notices the cut')
    room.map('m').set('offline-edit', 1)
    assert.equal(room.hasUnsyncedChanges(), true)
    link.restore()
    await eventually(() => room.status === 'synced', 'back online')
    await eventually(() => !room.hasUnsyncedChanges(), 'the reconnect uploads and the server acknowledges')
    const late = nodeClient(t.wsUrl).enter(name)
    await late.whenSynced()
    assert.equal(late.map('m').get('offline-edit'), 1)
    link.close()
  })

  it('stays true for a read-only client: the server never holds its edits', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('unsynced-ro')
    const writer = nodeClient(t.wsUrl, { token: await signToken({ room: name, access: 'rw' }) }).enter(name)
    const reader = nodeClient(t.wsUrl, { token: await signToken({ room: name, access: 'ro' }) }).enter(name)
    const errors = recordErrors(reader)
    const readerEvents = recordUnsynced(reader)
    await Promise.all([writer.whenSynced(), reader.whenSynced()])
    reader.map('m').set('x', 1)
    await eventually(() => errors.some((e) => e.code === 'READ_ONLY'), 'the reader is told')
    // The reader's frames so far (edit, sync-status request, then this presence) are handled in order.
    reader.presence.set({ after: 1 })
    await eventually(() => writer.presence.others().some((o) => o.after === 1), 'reader handled')
    writer.map('m').set('w', 1)
    await eventually(() => !writer.hasUnsyncedChanges(), 'the writer is acknowledged')
    // Sent to the reader after any answer to its earlier request would have been.
    writer.map('m').set('w', 2)
    await eventually(() => reader.map('m').get('w') === 2, 'the reader receives')
    assert.equal(reader.hasUnsyncedChanges(), true)
    assert.deepEqual(readerEvents, [true])
  })

  it('never sends sync-status messages to a plain y-websocket provider', async () => {
    const t = await startTestServer()
    const { doc, provider } = connectClient(t.wsUrl, uniqueRoom('plain'))
    const types: number[] = []
    const messageHandlers = provider.messageHandlers
    for (const type of [0, 1, 2, 3, MESSAGE_SYNC_STATUS]) {
      const handler = messageHandlers[type]
      messageHandlers[type] = (...args) => {
        types.push(type)
        handler?.(...args)
      }
    }
    await eventually(() => provider.synced, 'the provider syncs')
    doc.getMap('m').set('k', 1)
    const peer = nodeClient(t.wsUrl).enter(provider.roomname)
    await peer.whenSynced()
    await eventually(() => peer.map('m').get('k') === 1, 'the edit arrived')
    peer.map('m').set('back', 1)
    await eventually(() => doc.getMap('m').get('back') === 1, 'and came back')
    assert.ok(types.includes(0))
    assert.equal(types.includes(MESSAGE_SYNC_STATUS), false)
  })
})
