/**
 * The owner's side of `npm run bench:relay-transport` (a process of its own, pinned to the server's
 * CPU): it answers every message that reaches it with one message back to the edge, as an owner
 * sends a room's update back out once per edge (`fanout`). Messages come over both transports
 * the bench compares: a WebSocket server on loopback (the relay link) and the owner's inbox channel
 * on Redis (answered on the edge's). Replies of one turn leave in one write on either: the link's
 * socket is corked until the turn ends (as `cork-until-turn-ends.ts` does for the relay), and
 * ioredis pipelines the publishes of a turn. Arguments: Redis's URL, the owner's inbox channel, the
 * edge's.
 */
import type { Socket } from 'node:net'
import { Redis } from 'ioredis'
import { WebSocketServer } from 'ws'

const [redisUrl = '', OWNER_INBOX = '', EDGE_INBOX = ''] = process.argv.slice(2)
const publisher = new Redis(redisUrl, { enableAutoPipelining: true })
const subscriber = new Redis(redisUrl)
await subscriber.subscribe(OWNER_INBOX)
subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => {
  void publisher.publish(EDGE_INBOX, message)
})

const links = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
links.on('connection', (link) => {
  const socket = (link as unknown as { _socket: Socket })._socket
  let corked = false
  link.on('message', (message: Buffer) => {
    if (!corked) {
      corked = true
      socket.cork()
      setImmediate(() => {
        corked = false
        socket.uncork()
      })
    }
    link.send(message)
  })
})
links.once('listening', () => {
  const address = links.address()
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 })
})
process.on('disconnect', () => process.exit(0))
