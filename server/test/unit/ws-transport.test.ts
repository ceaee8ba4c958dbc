import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { WebSocket, WebSocketServer } from 'ws'
import { WsTransport } from '../../src/transport/ws-transport.js'

/** A client and the server side of its socket, as the gateway gets it. */
async function pair(server: WebSocketServer): Promise<{ client: WebSocket; served: WebSocket }> {
  const { port } = server.address() as AddressInfo
  const served = once(server, 'connection') as Promise<[WebSocket]>
  const client = new WebSocket(`ws://127.0.0.1:${port}`)
  await once(client, 'open')
  return { client, served: (await served)[0] }
}

function frames(client: WebSocket, count: number): Promise<number[]> {
  const received: number[] = []
  return new Promise((resolve) => {
    client.on('message', (data: Buffer) => {
      received.push(data[0] as number)
      if (received.length === count) resolve(received)
    })
  })
}

describe('WsTransport', () => {
  let server: WebSocketServer
  before(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    await once(server, 'listening')
  })
  after(() => server.close())

  it("writes a turn's frames once the turn ends, in order, in one write, each distinct callback once", async () => {
    const { client, served } = await pair(server)
    const transport = new WsTransport(served)
    const tcp = (served as unknown as { _socket: Socket })._socket
    let writes = 0
    const write = tcp.write.bind(tcp) as (...args: unknown[]) => boolean
    tcp.write = ((...args: unknown[]) => {
      writes++
      return write(...args)
    }) as typeof tcp.write
    const arrived = frames(client, 5)
    let recounts = 0
    const recount = () => recounts++
    let answered = 0
    for (let i = 1; i <= 4; i++) transport.send(Uint8Array.of(i, 0, 0), recount)
    transport.send(Uint8Array.of(5), () => answered++)
    assert.equal(writes, 0, 'nothing is written before the turn ends')
    assert.equal(transport.bufferedAmount, 4 * 5 + 3, 'held frames count as unsent (framed)')
    assert.deepEqual(await arrived, [1, 2, 3, 4, 5])
    assert.equal(writes, 1, 'one write for the whole turn')
    assert.equal(recounts, 1)
    assert.equal(answered, 1)
    assert.equal(transport.bufferedAmount, 0)
    client.close()
  })

  it('writes a big payload as it is after the frames before it', async () => {
    const { client, served } = await pair(server)
    const transport = new WsTransport(served)
    const big = new Uint8Array(100_000).fill(7)
    const received: Buffer[] = []
    const all = new Promise<void>((resolve) =>
      client.on('message', (data: Buffer) => {
        received.push(data)
        if (received.length === 3) resolve()
      }),
    )
    transport.send(Uint8Array.of(1))
    transport.send(big)
    transport.send(Uint8Array.of(3))
    await all
    assert.deepEqual(
      received.map((data) => data.length),
      [1, 100_000, 1],
    )
    assert.ok((received[1] as Buffer).every((byte) => byte === 7))
    client.close()
  })

  it('sends what it holds before its close frame, and nothing after', { timeout: 10_000 }, async () => {
    const { client, served } = await pair(server)
    const transport = new WsTransport(served)
    const arrived = frames(client, 2)
    const closed = once(client, 'close') as Promise<[number, Buffer]>
    transport.send(Uint8Array.of(1))
    transport.send(Uint8Array.of(2))
    transport.close(4000, 'bye')
    transport.send(Uint8Array.of(3))
    assert.deepEqual(await arrived, [1, 2])
    const [code] = await closed
    assert.equal(code, 4000)
  })
})
