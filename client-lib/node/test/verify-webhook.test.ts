import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, afterEach, describe, it } from 'node:test'
import { connectSynced, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { startTestServer, stopTestServers } from '@symphony/test-helpers/test-server'
import { Webhook } from 'standardwebhooks'
import { verifyWebhook, type WebhookEvent, WebhookVerificationError } from '../src/index.js'

/** The recipe docs/api.md gives: 32 random bytes, base64, after `whsec_`. */
const SECRET = `whsec_${randomBytes(32).toString('base64')}`
const NOW = Date.UTC(2030, 0, 1)
const now = () => NOW

/** A delivery as the `standardwebhooks` package signs it (the specification's reference code). */
function signed(body: string, { secret = SECRET, at = NOW, id = 'msg_1' } = {}) {
  const signature = new Webhook(secret).sign(id, new Date(at), body)
  return {
    body,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at / 1000)),
      'webhook-signature': signature,
    },
  }
}

const EVENT = { type: 'room.deleted', timestamp: new Date(NOW).toISOString(), data: { room: 'team-7/board' } }

/** The error `verifyWebhook` throws for this delivery, with its code. */
function refusal(code: string) {
  return (error: unknown) => error instanceof WebhookVerificationError && error.code === code
}

describe('verifyWebhook', () => {
  it('returns the event of a delivery signed per Standard Webhooks, whatever form its headers and body take', () => {
    const { body, headers } = signed(JSON.stringify(EVENT))
    const forms: [string, Parameters<typeof verifyWebhook>[0], Parameters<typeof verifyWebhook>[1]][] = [
      ['node headers, Buffer body (express.raw)', headers as IncomingHttpHeaders, Buffer.from(body)],
      ['Fetch Headers, string body (request.text())', new Headers(headers), body],
      [
        'other capitals, ArrayBuffer body',
        Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v])),
        new TextEncoder().encode(body).buffer as ArrayBuffer,
      ],
      [
        'a header as an array of one, Uint8Array body',
        { ...headers, 'webhook-id': ['msg_1'] },
        new TextEncoder().encode(body),
      ],
    ]
    for (const [form, given, raw] of forms) {
      assert.deepEqual(verifyWebhook(given, raw, SECRET, { now }), EVENT, form)
    }
  })

  it('accepts any matching v1 signature among several (a secret being rotated) and ignores other versions', () => {
    const { body, headers } = signed(JSON.stringify(EVENT))
    const old = signed(JSON.stringify(EVENT), { secret: `whsec_${randomBytes(32).toString('base64')}` })
    const both = `v2,abc ${old.headers['webhook-signature']} ${headers['webhook-signature']}`
    assert.deepEqual(verifyWebhook({ ...headers, 'webhook-signature': both }, body, SECRET, { now }), EVENT)
    const v2 = headers['webhook-signature'].replace('v1,', 'v2,')
    assert.throws(
      () => verifyWebhook({ ...headers, 'webhook-signature': v2 }, body, SECRET, { now }),
      refusal('WEBHOOK_SIGNATURE_INVALID'),
    )
  })

  it('refuses a changed body, another secret, another id and missing headers', () => {
    const { body, headers } = signed(JSON.stringify(EVENT))
    const other = `whsec_${randomBytes(32).toString('base64')}`
    const cases: [string, () => unknown, string][] = [
      [
        'a changed body',
        () => verifyWebhook(headers, body.replace('board', 'b0ard'), SECRET, { now }),
        'WEBHOOK_SIGNATURE_INVALID',
      ],
      [
        'the body parsed and serialized again',
        () => verifyWebhook(headers, JSON.stringify(JSON.parse(body), null, 1), SECRET, { now }),
        'WEBHOOK_SIGNATURE_INVALID',
      ],
      ['another secret', () => verifyWebhook(headers, body, other, { now }), 'WEBHOOK_SIGNATURE_INVALID'],
      [
        'another id',
        () => verifyWebhook({ ...headers, 'webhook-id': 'msg_2' }, body, SECRET, { now }),
        'WEBHOOK_SIGNATURE_INVALID',
      ],
      [
        'no signature',
        () => verifyWebhook({ ...headers, 'webhook-signature': undefined }, body, SECRET, { now }),
        'WEBHOOK_HEADERS_MISSING',
      ],
      [
        'no id',
        () =>
          verifyWebhook(
            new Headers({
              'webhook-timestamp': headers['webhook-timestamp'],
              'webhook-signature': headers['webhook-signature'],
            }),
            body,
            SECRET,
            { now },
          ),
        'WEBHOOK_HEADERS_MISSING',
      ],
      [
        'an id given twice',
        () => verifyWebhook({ ...headers, 'webhook-id': ['msg_1', 'msg_1'] }, body, SECRET, { now }),
        'WEBHOOK_HEADERS_MISSING',
      ],
      [
        'a timestamp that is no number',
        () => verifyWebhook({ ...headers, 'webhook-timestamp': '1e9' }, body, SECRET, { now }),
        'WEBHOOK_TIMESTAMP_INVALID',
      ],
    ]
    for (const [what, verify, code] of cases) assert.throws(verify, refusal(code), what)
  })

  it('refuses a delivery signed more than toleranceSeconds (300) from now, either way', () => {
    const body = JSON.stringify(EVENT)
    for (const [offset, ok] of [
      [-300, true],
      [300, true],
      [-301, false],
      [301, false],
    ] as const) {
      const delivery = signed(body, { at: NOW + offset * 1000 })
      const verify = () => verifyWebhook(delivery.headers, body, SECRET, { now })
      if (ok) assert.deepEqual(verify(), EVENT, `${offset} s`)
      else assert.throws(verify, refusal('WEBHOOK_TIMESTAMP_INVALID'), `${offset} s`)
    }
    const late = signed(body, { at: NOW - 11_000 })
    assert.throws(
      () => verifyWebhook(late.headers, body, SECRET, { now, toleranceSeconds: 10 }),
      refusal('WEBHOOK_TIMESTAMP_INVALID'),
    )
    assert.deepEqual(verifyWebhook(late.headers, body, SECRET, { now, toleranceSeconds: 11 }), EVENT)
  })

  it('refuses a signed body that is no event, and throws TypeError for a receiver’s own mistakes', () => {
    for (const body of ['not json', '[]', '{"type":"x"}', '\uFFFE']) {
      const delivery = signed(body)
      assert.throws(
        () => verifyWebhook(delivery.headers, body, SECRET, { now }),
        refusal('WEBHOOK_BODY_INVALID'),
        body,
      )
    }
    const { body, headers } = signed(JSON.stringify(EVENT))
    assert.throws(() => verifyWebhook(headers, JSON.parse(body), SECRET, { now }), /raw request body/)
    for (const secret of [
      '',
      'whsec_',
      `whsec_${randomBytes(8).toString('base64')}`,
      SECRET.slice(6),
      undefined,
    ]) {
      assert.throws(() => verifyWebhook(headers, body, secret as string, { now }), TypeError, String(secret))
    }
  })
})

describe('verifyWebhook against a real server’s deliveries', () => {
  afterEach(async () => {
    destroyClients()
    await stopTestServers()
  })
  const servers: (() => void)[] = []
  after(() => {
    for (const close of servers) close()
  })

  it('verifies user.joined, document.updated and user.left from the server, typed', async () => {
    const received: WebhookEvent[] = []
    const refused: string[] = []
    const receiver = createServer(async (request, response) => {
      const chunks: Buffer[] = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      try {
        received.push(verifyWebhook(request.headers, Buffer.concat(chunks), SECRET))
        response.writeHead(204).end()
      } catch (error) {
        refused.push(String(error))
        response.writeHead(400).end()
      }
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    servers.push(() => receiver.close())
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
    const t = await startTestServer({
      backends: { events: { kind: 'webhook', url, secret: SECRET, debounceMs: 50 } },
    })
    const room = uniqueRoom('hooks')
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getArray('log').push(['hello'])
    await eventually(() => received.some((e) => e.type === 'document.updated'), 'document.updated')
    client.destroy()
    await eventually(() => received.some((e) => e.type === 'user.left'), 'user.left')
    assert.deepEqual(refused, [])
    const joined = received.find((e) => e.type === 'user.joined')
    assert.ok(joined?.type === 'user.joined')
    assert.equal(joined.data.room, room)
    const updated = received.find((e) => e.type === 'document.updated')
    assert.ok(updated?.type === 'document.updated')
    assert.ok(Date.parse(updated.data.lastChangedAt) > 0)
  })
})
