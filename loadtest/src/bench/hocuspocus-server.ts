/** Hocuspocus for `npm run bench`: its server with no extensions, documents in memory, on PORT. */
import { Server } from '@hocuspocus/server'

const port = Number(process.env.PORT ?? 1234)
const server = new Server({ port, address: '127.0.0.1', quiet: true })
await server.listen()
console.log(`running at 127.0.0.1 on port ${port}`)
