import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import { Webhook } from 'standardwebhooks'
import * as Y from 'yjs'
import { roomKey } from '../src/adapters/room-keys.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { CLUSTER_API_SECRET, roomApi, useTestCluster } from './helpers/cluster.js'

const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`

/** The REST API and webhooks of real server processes over Redis, DynamoDB and S3 (moto). */
describe('the REST API, webhooks and broadcast events in a real local cluster', () => {
  const cluster = useTestCluster()
  afterEach(destroyClients)
  // Passed or failed: a client left reconnecting would keep the test file from ever exiting.
  afterEach(() => destroyNodeClients())

  it('a write through one server reaches the clients of another; a delete there clears every store', async () => {
    const env = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '200' }
    const a = await cluster.start('api-a', env)
    const b = await cluster.start('api-b', env)
    const room = uniqueRoom('team/api')
    const onA = await connectSynced(a.wsUrl, encodeURIComponent(room))
    onA.doc.getText('t').insert(0, 'held by A')
    await eventually(
      async () => (await (await roomApi(b, room, '/document')).json()).t === 'held by A',
      'B reads it',
      10_000,
    )
    const backend = new Y.Doc()
    backend.getMap('m').set('via', 'b')
    const posted = await roomApi(b, room, '/update', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Blob([Y.encodeStateAsUpdate(backend) as Uint8Array<ArrayBuffer>]),
    })
    assert.equal(posted.status, 204)
    await eventually(() => onA.doc.getMap('m').get('via') === 'b', 'A’s client gets it', 10_000)
    await eventually(async () => (await cluster.snapshot(room)) !== null, 'saved to S3', 15_000)

    const closed = new Promise<number>((resolve) =>
      onA.provider.once('connection-close', (e) => resolve(e?.code ?? 0)),
    )
    assert.equal((await roomApi(b, room, '', { method: 'DELETE' })).status, 204)
    assert.equal(await closed, CloseCode.RoomDeleted)
    await eventually(async () => (await cluster.snapshot(room)) === null, 'the S3 snapshot is gone', 10_000)
    await eventually(async () => (await cluster.ownerItem(room))?.released === true, 'released', 10_000)
    await eventually(
      async () => (await cluster.redisKeys(`*journal:{${roomKey(room)}}*`)).length === 0,
      'no journal streams',
      10_000,
    )
    assert.deepEqual(await (await roomApi(a, room, '/document')).json(), {}, 'a new, empty room')
    for (const server of [a, b]) server.child.kill('SIGKILL')
  })

  it('webhooks: each event once, from the server where it happened, signed', async () => {
    const verifier = new Webhook(WEBHOOK_SECRET)
    const events: { id: string; type: string; room: unknown }[] = []
    const receiver = createServer(async (request, response) => {
      let body = ''
      for await (const chunk of request) body += chunk
      const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))
      const payload = verifier.verify(body, headers) as { type: string; data: { room: unknown } }
      events.push({ id: headers['webhook-id'] ?? '', type: payload.type, room: payload.data.room })
      response.writeHead(204).end()
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const env = {
      WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
      WEBHOOK_SECRET,
      WEBHOOK_DEBOUNCE_MS: '100',
    }
    const a = await cluster.start('hooks-a', env)
    const b = await cluster.start('hooks-b', env)
    const room = uniqueRoom('hooks')
    const onA = await connectSynced(a.wsUrl, room)
    const onB = await connectSynced(b.wsUrl, room)
    onA.doc.getText('t').insert(0, 'hello')
    await eventually(() => onB.doc.getText('t').toString() === 'hello', 'both hold it', 10_000)
    onA.destroy()
    onB.destroy()
    // A graceful stop sends what each server still holds back: all that will ever come is here.
    for (const server of [a, b]) {
      server.child.kill('SIGTERM')
      await server.exited
    }
    const ofType = (type: string) => events.filter((e) => e.type === type && e.room === room)
    assert.equal(ofType('user.joined').length, 2)
    assert.equal(ofType('user.left').length, 2)
    assert.equal(ofType('document.updated').length, 1, 'reported by A only')
    assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no duplicates')
    receiver.close()
  })
  it('broadcast events cross servers over the relay, to our clients only', async () => {
    const a = await cluster.start('events-a')
    const b = await cluster.start('events-b')
    const room = uniqueRoom('events')
    const sender = nodeClient(a.wsUrl).enter(room)
    const listener = nodeClient(b.wsUrl).enter(room)
    await Promise.all([sender.whenSynced(), listener.whenSynced()])
    const heard: unknown[] = []
    listener.on('event', (data) => heard.push(data))
    // a owns the room; b relays its client there, on one ordered link: sent once, heard once.
    assert.equal(sender.broadcast({ hello: 'from A' }), true)
    await eventually(() => heard.length > 0, 'B hears A')
    assert.deepEqual(heard[0], { hello: 'from A' }, 'B hears A')
    await destroyNodeClients()
    for (const server of [a, b]) server.child.kill('SIGKILL')
  })
})
