// beforeApply and the room's life: updates are decided one at a time per room (each check sees the
// room as the update before left it), an update accepted after its author left is still kept, and
// a scratch copy exists only while the hook decides. Found by an adversarial review of the hooks.
import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { cleanUpAfterTest } from '@symphony/test-helpers/cleanup'
import { connectSynced, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { metricValue } from '@symphony/test-helpers/cluster'
import { deferred } from '@symphony/test-helpers/deferred'
import { destroyNodeClients } from '@symphony/test-helpers/node-client'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import * as Y from 'yjs'
import { refuse, type UpdateToApply } from '../src/server-hooks.js'

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

const updatesReceived = async (t: TestServer) =>
  metricValue(await (await fetch(`${t.httpUrl}/metrics`)).text(), 'symphony_messages_received_total')

describe('beforeApply, one update at a time per room', () => {
  it('two writers each within an async "at most 10 characters" check cannot together pass it', async () => {
    const first = deferred()
    const lengths: number[] = []
    const t = await startTestServer({
      hooks: {
        beforeApply: async (update) => {
          if (update.origin !== 'client') return
          const length = update.documentAfter().getText('title').length
          lengths.push(length)
          if (lengths.length === 1) await first.promise // the app asks its database, say
          if (length > 10) refuse('a title has at most 10 characters')
        },
      },
    })
    const room = uniqueRoom('title')
    const tab1 = await connectSynced(t.wsUrl, room)
    const tab2 = await connectSynced(t.wsUrl, room)
    tab1.doc.getText('title').insert(0, 'aaaaaa')
    await eventually(() => lengths.length === 1, 'the first check started')
    const before = await updatesReceived(t)
    const refused = new Promise<number>((resolve) =>
      tab2.provider.once('connection-close', (event: { code?: number } | null) => resolve(event?.code ?? 0)),
    )
    tab2.doc.getText('title').insert(0, 'bbbbbb')
    await eventually(async () => (await updatesReceived(t)) > before, "the server received tab 2's update")
    first.resolve()
    assert.equal(await refused, 4422, 'the second update is checked against the room with the first in it')
    assert.deepEqual(lengths, [6, 12])
    assert.equal(((await t.server.room(room).toJSON()) as { title: string }).title, 'aaaaaa')
  })

  it('an update accepted after its author left is applied and saved before the room unloads', async () => {
    const decide = deferred()
    let asked = false
    const t = await startTestServer({
      hookTimeoutMs: 10_000,
      hooks: {
        beforeApply: async (update) => {
          if (update.origin !== 'client') return
          asked = true
          await decide.promise
        },
      },
    })
    const room = uniqueRoom('last-edit')
    const bob = await connectSynced(t.wsUrl, room)
    bob.doc.getText('t').insert(0, 'typed, then the tab closed')
    await eventually(() => asked, 'the hook is deciding')
    bob.destroy()
    // The unload is posted to the room's mailbox behind the update being decided, and waits for it.
    await eventually(() => t.server.manager.roomSteps(room) === 2, 'the room is to unload after it')
    assert.equal(t.server.manager.roomState(room), 'live')
    decide.resolve()
    await eventually(() => t.server.manager.roomState(room) === 'gone', 'the room unloaded')
    assert.equal((await t.server.room(room).toJSON()).t, 'typed, then the tab closed')
  })
})

describe('documentAfter() outside the decision', () => {
  it('called by a hook past hookTimeoutMs, it throws and charges nothing', async () => {
    const late = deferred()
    const outcome = deferred<unknown>()
    const t = await startTestServer({
      hookTimeoutMs: 100,
      hooks: {
        beforeApply: async (update) => {
          if (update.origin !== 'client') return
          await late.promise
          try {
            outcome.resolve(update.documentAfter())
          } catch (error) {
            outcome.resolve(error)
          }
        },
      },
    })
    const room = uniqueRoom('late-copy')
    const seed = new Y.Doc()
    seed.getText('t').insert(0, 'x'.repeat(100_000))
    await t.server.room(room).applyUpdate(Y.encodeStateAsUpdate(seed))
    const alice = await connectSynced(t.wsUrl, room)
    const closed = new Promise<number>((resolve) =>
      alice.provider.once('connection-close', (event: { code?: number } | null) => resolve(event?.code ?? 0)),
    )
    alice.doc.getText('t').insert(0, 'y')
    assert.equal(await closed, CloseCode.TryAgainLater, 'refused as busy past hookTimeoutMs')
    late.resolve()
    assert.match(String(await outcome.promise), /only while beforeApply decides/)
    assert.equal(t.server.memory.usedBy('big-update'), 0)
  })

  it('called later on an update a hook kept, it throws and charges nothing', async () => {
    let kept: UpdateToApply | null = null
    const t = await startTestServer({
      hooks: {
        beforeApply: (update) => {
          if (update.origin === 'client') kept = update // an audit log that reads it later, say
        },
      },
    })
    const room = uniqueRoom('kept-update')
    const alice = await connectSynced(t.wsUrl, room)
    alice.doc.getText('t').insert(0, 'hello')
    await eventually(async () => (await t.server.room(room).toJSON()).t === 'hello', 'the update applied')
    const update = kept as UpdateToApply | null
    assert.ok(update)
    assert.throws(() => update.documentAfter(), /only while beforeApply decides/)
    assert.equal(t.server.memory.usedBy('big-update'), 0)
  })
})
