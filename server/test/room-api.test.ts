import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import type { EventSender } from '@symphony/client/wire'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import * as Y from 'yjs'
import { refuse } from '../src/server-hooks.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { startTestCluster, startTestServer } from './helpers/test-server.js'

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

function textUpdate(text: string): Uint8Array {
  const doc = new Y.Doc()
  doc.getText('t').insert(0, text)
  return Y.encodeStateAsUpdate(doc)
}

describe('server.room(name): the room from the embedding app', () => {
  it('applies an update as a REST write (loading the room), reads it back as state and JSON, and deletes the room', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('domain')
    const room = t.server.room(name)
    await room.applyUpdate(textUpdate('from the app'))
    const alice = await connectSynced(t.wsUrl, name)
    assert.equal(alice.doc.getText('t').toString(), 'from the app')
    assert.deepEqual(await room.toJSON(), { t: 'from the app' })
    const copy = new Y.Doc()
    Y.applyUpdate(copy, await room.encodeState())
    assert.equal(copy.getText('t').toString(), 'from the app')
    assert.equal((await room.encodeState(Y.encodeStateVector(copy))).length <= 2, true, 'nothing lacking')

    const closed = new Promise<number>((resolve) =>
      alice.provider.once('connection-close', (event) => resolve(event?.code ?? 0)),
    )
    await room.delete()
    assert.equal(await closed, 4404)
    assert.deepEqual(await room.toJSON(), {}, 'a deleted room loads empty')
  })

  it('runs the checks and beforeApply of a REST write: a refusal rejects with its code', async () => {
    const t = await startTestServer({
      hooks: {
        beforeApply: (update) => (update.origin === 'rest' ? refuse('no writes from the app') : undefined),
      },
    })
    const room = t.server.room(uniqueRoom('domain-refused'))
    await assert.rejects(room.applyUpdate(textUpdate('x')), {
      code: 'UPDATE_REFUSED',
      message: 'no writes from the app',
    })
    await assert.rejects(room.applyUpdate(new Uint8Array([1, 2, 3])), { code: 'PROTOCOL_ERROR' })
    assert.deepEqual(await room.toJSON(), {})
    assert.throws(() => t.server.room(''), { code: 'ROOM_NAME_INVALID' })
  })

  it('broadcasts an event from the server to the clients that hear events, on every server', async () => {
    const [a, b] = await startTestCluster()
    const name = uniqueRoom('domain-events')
    const onA = nodeClient(a.wsUrl).enter(name)
    const onB = nodeClient(b.wsUrl).enter(name)
    await Promise.all([onA.whenSynced(), onB.whenSynced()])
    const heard: { data: unknown; from: EventSender | null }[] = []
    onA.on('event', (data, from) => heard.push({ data, from }))
    onB.on('event', (data, from) => heard.push({ data, from }))
    await a.server.room(name).broadcast({ type: 'notice', text: 'maintenance at noon' })
    await eventually(() => heard.length === 2, 'both servers’ clients hear it')
    for (const { data, from } of heard) {
      assert.deepEqual(data, { type: 'notice', text: 'maintenance at noon' })
      assert.equal(from?.userId, 'symphony:api')
      assert.equal(from?.connectionId, 'a:server')
    }
  })
})
