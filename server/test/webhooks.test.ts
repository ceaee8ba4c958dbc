import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { webhookKey } from '../src/adapters/webhooks/standard-webhooks.js'
import { WebhookSender } from '../src/adapters/webhooks/webhook-sender.js'
import { silentLogger } from '../src/logger.js'
import type { RoomEvent } from '../src/ports/room-events.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { recordingLogger } from './helpers/recording-logger.js'
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
 * package; `failFirst` deliveries are answered 500 before it starts accepting (`Infinity`: a
 * receiver that is down).
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
  const close = () => {
    if (!receivers.delete(close)) return
    server.closeAllConnections()
    server.close()
  }
  receivers.add(close)
  return { url, accepted, refusedIds, invalid, close }
}

/** Receivers still listening: closed after each test, passed or failed. */
const receivers = new Set<() => void>()

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

afterEach(async () => {
  for (const close of receivers) close()
  await cleanUpAfterTest()
})

const joined = (i: number): RoomEvent => ({
  type: 'user.joined',
  room: 'r',
  connectionId: `c${i}`,
  userId: 'u',
  name: null,
  at: Date.now(),
})

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
    const registryTable = new MemoryRegistryTable()
    const internal = {
      port: 0,
      advertisedHost: '127.0.0.1',
      token: 'internal-token-0123456789',
    }
    const shared = { registryTable, internal }
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
    const closeStuck = () => {
      receivers.delete(closeStuck)
      stuck.closeAllConnections()
      stuck.close()
    }
    receivers.add(closeStuck)
    const events = new WebhookSender({
      url,
      key: webhookKey(SECRET),
      debounceMs: 0,
      logger: silentLogger,
      maxQueued: 2,
    })
    for (let i = 0; i < 10; i++) events.emit(joined(i))
    assert.deepEqual(events.stats(), { queued: 2, dropped: 8 }, '2 in flight (the bound), 8 dropped')
    closeStuck()
    await events.close(100)
  })
})

describe('webhooks while the receiver is down', () => {
  it('counts events waiting for a retry toward the bound: nothing past it is held, the rest is dropped', async () => {
    const receiver = await startReceiver(Number.POSITIVE_INFINITY)
    const maxQueued = 5
    const events = new WebhookSender({
      url: receiver.url,
      key: webhookKey(SECRET),
      debounceMs: 0,
      logger: silentLogger,
      maxQueued,
      // Every failed event waits a long while for its retry: held, outside the delivery queue.
      retryBaseMs: 60_000,
      retryMaxMs: 60_000,
    })
    let emitted = 0
    for (let wave = 0; wave < 4; wave++) {
      for (let i = 0; i < 20; i++) events.emit(joined(emitted++))
      const { queued, dropped } = events.stats()
      assert.ok(queued <= maxQueued, `wave ${wave}: ${queued} held, at most ${maxQueued}`)
      assert.equal(queued + dropped, emitted, `wave ${wave}: every event is held or counted as dropped`)
      // Each held event has failed once and now waits for its retry, before the next wave.
      await eventually(() => receiver.refusedIds.length === maxQueued, 'each held event tried once')
    }
    assert.deepEqual(events.stats(), { queued: maxQueued, dropped: emitted - maxQueued })
    await events.close(100)
    receiver.close()
  })

  it('logs "webhook failed" once per interval, with how many failures it left out', async () => {
    const receiver = await startReceiver(Number.POSITIVE_INFINITY)
    const logger = recordingLogger()
    const events = new WebhookSender({
      url: receiver.url,
      key: webhookKey(SECRET),
      debounceMs: 0,
      logger,
      retryBaseMs: 1,
      retryMaxMs: 2,
      maxAttempts: 1_000,
      // Longer than the test: every failure after the first is left out until the sender closes.
      logIntervalMs: 600_000,
    })
    for (let i = 0; i < 20; i++) events.emit(joined(i))
    await eventually(() => receiver.refusedIds.length >= 200, '200 failed deliveries')
    const failedLines = () => logger.entries.filter((e) => e.message === 'webhook failed')
    assert.equal(failedLines().length, 1, 'one line so far, however many failures')
    // Closing waits for the tries in flight (each then given up), so every refusal is logged by now.
    await events.close()
    const lines = failedLines()
    assert.equal(lines.length, 2, 'and one summary when the sender closes')
    const given = logger.entries.filter((e) => e.message === 'webhook given up')
    const logged = (entries: typeof lines) =>
      entries.reduce((sum, e) => sum + 1 + ((e.fields.suppressed as number | undefined) ?? 0), 0)
    // Every refused try is a failure (retried) or, once closed, a give-up, and is counted (tries
    // that never reached the receiver, a reset keep-alive socket, are failures too).
    assert.ok(logged(lines) + logged(given) >= receiver.refusedIds.length, 'no failure uncounted')
    receiver.close()
  })
})

describe('webhook ids', () => {
  it('never repeat across servers, or restarts, under the same SERVER_ID', async () => {
    const receiver = await startReceiver()
    const room = uniqueRoom('same-server-id')
    for (let run = 0; run < 2; run++) {
      const events = sender(receiver.url)
      const t = await startTestServer({ serverId: 'same-id', adapters: { events } })
      const client = await connectSynced(t.wsUrl, room)
      client.destroy()
      await eventually(
        () =>
          ofType(receiver.accepted, 'user.left').length === run + 1 &&
          ofType(receiver.accepted, 'user.joined').length === run + 1,
        'the join and the leave',
      )
      await t.stop()
    }
    const joins = ofType(receiver.accepted, 'user.joined')
    assert.equal(joins.length, 2)
    assert.notEqual(joins[0]?.id, joins[1]?.id, 'each first join of a start has its own webhook-id')
    assert.notEqual(joins[0]?.data.connectionId, joins[1]?.data.connectionId, 'and its own connection id')
    const ids = receiver.accepted.map((e) => e.id)
    assert.equal(new Set(ids).size, ids.length, 'distinct events, distinct ids')
    receiver.close()
  })
})
