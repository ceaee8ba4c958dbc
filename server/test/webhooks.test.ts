import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { MemoryBus } from '../src/adapters/memory-pubsub.js'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { webhookKey } from '../src/adapters/webhooks/standard-webhooks.js'
import { WebhookSender } from '../src/adapters/webhooks/webhook-sender.js'
import { silentLogger } from '../src/logger.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { startTestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

interface Received {
  id: string
  type: string
  data: Record<string, unknown>
}

/**
 * A webhook receiver on a free port that verifies every delivery with the `standardwebhooks`
 * package; `failFirst` deliveries are answered 500 before it starts accepting.
 */
async function startReceiver(failFirst = 0) {
  const verifier = new Webhook(SECRET)
  const accepted: Received[] = []
  const refusedIds: string[] = []
  const invalid: string[] = []
  let failuresLeft = failFirst
  const server = createServer(async (request, response) => {
    let body = ''
    for await (const chunk of request) body += chunk
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))
    try {
      const payload = verifier.verify(body, headers) as { type: string; data: Record<string, unknown> }
      if (failuresLeft > 0) {
        failuresLeft--
        refusedIds.push(headers['webhook-id'] ?? '')
        response.writeHead(500).end()
        return
      }
      accepted.push({ id: headers['webhook-id'] ?? '', type: payload.type, data: payload.data })
      response.writeHead(204).end()
    } catch (error) {
      invalid.push((error as Error).message)
      response.writeHead(400).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  return { url, accepted, refusedIds, invalid, close: () => server.close() }
}

function sender(url: string) {
  return new WebhookSender({
    url,
    key: webhookKey(SECRET),
    debounceMs: 150,
    logger: silentLogger,
    retryBaseMs: 50,
    retryMaxMs: 200,
  })
}

afterEach(cleanUpAfterTest)

const ofType = (events: Received[], type: string) => events.filter((e) => e.type === type)

describe('webhooks', () => {
  it('sends signed user.joined, one debounced document.updated, user.left and room.deleted', async () => {
    const receiver = await startReceiver()
    const t = await startTestServer({
      auth: { mode: 'jwt', secret: TEST_SECRET },
      apiSecret: API_SECRET,
      adapters: { events: sender(receiver.url) },
    })
    const room = uniqueRoom('hooks')
    const token = await signToken({ room, access: 'rw', sub: 'u-ada', name: 'Ada' })
    const client = await connectSynced(t.wsUrl, room, { token })
    for (let i = 0; i < 5; i++) client.doc.getArray('log').push([i])
    await eventually(() => ofType(receiver.accepted, 'document.updated').length === 1, 'one document.updated')
    client.destroy()
    await eventually(() => ofType(receiver.accepted, 'user.left').length === 1, 'user.left')
    const deleted = await fetch(`${t.httpUrl}/api/v1/rooms/${room}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${API_SECRET}` },
    })
    assert.equal(deleted.status, 204)
    await eventually(() => ofType(receiver.accepted, 'room.deleted').length === 1, 'room.deleted')
    const [joined] = ofType(receiver.accepted, 'user.joined')
    assert.deepEqual(
      { room: joined?.data.room, userId: joined?.data.userId, name: joined?.data.name },
      { room, userId: 'u-ada', name: 'Ada' },
    )
    assert.equal(ofType(receiver.accepted, 'document.updated')[0]?.data.room, room)
    assert.equal(ofType(receiver.accepted, 'document.updated').length, 1, 'five edits, one event')
    assert.deepEqual(receiver.invalid, [], 'every signature verified')
    receiver.close()
  })

  it('retries a failing receiver with the same webhook-id until it recovers', async () => {
    const receiver = await startReceiver(3)
    const t = await startTestServer({ adapters: { events: sender(receiver.url) } })
    const room = uniqueRoom('retry')
    await connectSynced(t.wsUrl, room)
    await eventually(() => ofType(receiver.accepted, 'user.joined').length === 1, 'delivered after failures')
    const id = ofType(receiver.accepted, 'user.joined')[0]?.id
    assert.deepEqual(receiver.refusedIds, [id, id, id], 'each retry carried the same id')
    receiver.close()
  })

  it('in a cluster, a change is reported once, by the server its client is on', async () => {
    const receiver = await startReceiver()
    const bus = new MemoryBus()
    const registryTable = new MemoryRegistryTable()
    const internal = {
      port: 0,
      advertisedHost: '127.0.0.1',
      token: 'internal-token-0123456789',
      fetchTimeoutMs: 1_000,
    }
    const shared = { bus, registryTable, internal }
    const [senderA, senderB] = [sender(receiver.url), sender(receiver.url)]
    const a = await startTestServer({ ...shared, serverId: 'a', adapters: { events: senderA } })
    const b = await startTestServer({ ...shared, serverId: 'b', adapters: { events: senderB } })
    const room = uniqueRoom('cluster-hooks')
    const onA = await connectSynced(a.wsUrl, room)
    const onB = await connectSynced(b.wsUrl, room)
    onA.doc.getText('t').insert(0, 'hello')
    await eventually(() => onB.doc.getText('t').toString() === 'hello', 'B has it')
    await eventually(() => ofType(receiver.accepted, 'document.updated').length >= 1, 'reported')
    await eventually(() => ofType(receiver.accepted, 'user.joined').length === 2, 'both joins')
    // Closing sends whatever a sender still holds back: had B noted the change, it would come now.
    await Promise.all([senderA.close(), senderB.close()])
    assert.equal(ofType(receiver.accepted, 'document.updated').length, 1)
    const ids = receiver.accepted.map((e) => e.id)
    assert.equal(new Set(ids).size, ids.length, 'distinct events, distinct ids')
    receiver.close()
  })

  it('never slows sync: a stuck receiver fills a bounded queue, and the overflow is counted', async () => {
    const stuck = createServer(() => {}) // takes requests, never answers
    await new Promise<void>((resolve) => stuck.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(stuck.address() as AddressInfo).port}/`
    const events = new WebhookSender({
      url,
      key: webhookKey(SECRET),
      debounceMs: 0,
      logger: silentLogger,
      maxQueued: 2,
    })
    const joined = (i: number) =>
      ({
        type: 'user.joined',
        room: 'r',
        connectionId: `c${i}`,
        userId: 'u',
        name: null,
        at: Date.now(),
      }) as const
    for (let i = 0; i < 10; i++) events.emit(joined(i))
    assert.deepEqual(events.stats(), { queued: 6, dropped: 4 }, '4 in flight, 2 waiting, 4 dropped')
    stuck.closeAllConnections()
    stuck.close()
    await events.close(100)
  })
})
