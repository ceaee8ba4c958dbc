import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { WebSocket, WebSocketServer } from 'ws'
import { decodeRelayMessage, type RelayMessage } from '../../src/protocol/relay-frames.js'
import { RelayLinkSender } from '../../src/transport/relay-link-sender.js'
import { WsTransport } from '../../src/transport/ws-transport.js'

/** An edge's socket and the owner's side of it, as the relay host gets it. */
async function link(server: WebSocketServer): Promise<{ edge: WebSocket; owner: WebSocket }> {
  const { port } = server.address() as AddressInfo
  const served = once(server, 'connection') as Promise<[WebSocket]>
  const edge = new WebSocket(`ws://127.0.0.1:${port}`)
  await once(edge, 'open')
  return { edge, owner: (await served)[0] }
}

function messages(edge: WebSocket, count: number): Promise<RelayMessage[]> {
  const received: RelayMessage[] = []
  return new Promise((resolve) => {
    edge.on('message', (data: Buffer) => {
      received.push(decodeRelayMessage(data))
      if (received.length === count) resolve(received)
    })
  })
}

const bytes = (...values: number[]) => new Uint8Array(values)

describe('RelayLinkSender', () => {
  let server: WebSocketServer
  before(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    await once(server, 'listening')
  })
  after(() => server.close())

  it("sends a broadcast to a link's sessions as one message, each callback once", async () => {
    const { edge, owner } = await link(server)
    const sender = new RelayLinkSender(new WsTransport(owner))
    const received = messages(edge, 1)
    const broadcast = bytes(0, 1, 2, 3)
    const sent: number[] = []
    for (const session of [4, 9, 17]) sender.sendFrame(session, broadcast, () => sent.push(session))
    assert.deepEqual(await received, [{ kind: 'fanout', sessions: [4, 9, 17], frame: broadcast }])
    await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(sent, [4, 9, 17])
    edge.close()
  })

  it("keeps each session's frames in order: only consecutive sends of one frame merge", async () => {
    const { edge, owner } = await link(server)
    const sender = new RelayLinkSender(new WsTransport(owner))
    const received = messages(edge, 4)
    const update = bytes(0, 2, 7)
    sender.sendFrame(1, update)
    sender.sendFrame(2, update)
    sender.sendFrame(2, bytes(0, 1, 9)) // session 2's own answer, after the update
    sender.sendFrame(3, update) // the same bytes again: after the answer, so not merged above
    sender.send({ kind: 'close', session: 1, code: 4001, reason: 'bye' })
    assert.deepEqual(await received, [
      { kind: 'fanout', sessions: [1, 2], frame: update },
      { kind: 'frame', session: 2, frame: bytes(0, 1, 9) },
      { kind: 'frame', session: 3, frame: update },
      { kind: 'close', session: 1, code: 4001, reason: 'bye' },
    ])
    edge.close()
  })

  it('refuses a fanout whose sessions run past its end', () => {
    const truncated = Buffer.from([4, 3, 0, 0, 0, 1, 0, 0, 0])
    assert.throws(() => decodeRelayMessage(truncated), /shorter than its sessions/)
  })
})
