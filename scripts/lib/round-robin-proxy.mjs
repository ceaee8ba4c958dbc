// A tiny round-robin front proxy for `npm run cluster`, standing in for the load balancer: plain HTTP
// requests (the demo page, /healthz, /metrics) and WebSocket upgrades go to the targets in turn, so two
// browser tabs land on two different sync servers. A development tool, not a production proxy.
import { createServer, request } from 'node:http'
import { connect } from 'node:net'

/** @import { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http' */
/** @import { Duplex } from 'node:stream' */
/** @import { AddressInfo, Socket } from 'node:net' */

/**
 * @typedef {object} ProxyTarget
 * @property {string} host
 * @property {number} port
 */
/**
 * @typedef {object} RoundRobinProxy
 * @property {number} port The port it listens on (the one picked when asked for 0).
 * @property {() => Promise<void>} close Stops listening and drops every connection it holds.
 */

/** How long a target may take to accept the TCP connection before the next one is tried. */
const CONNECT_TIMEOUT_MS = 2_000

// Headers that describe one hop (client ↔ proxy or proxy ↔ server), never forwarded as they are.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

/**
 * The headers minus the hop-by-hop ones, including any the `connection` header names.
 * @param {IncomingHttpHeaders} headers
 */
function endToEndHeaders(headers) {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
  /** @type {OutgoingHttpHeaders} */
  const kept = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.includes(name)) kept[name] = value
  }
  return kept
}

/**
 * The upgrade request as it arrived: request line and raw headers, ready to replay to a target.
 * @param {IncomingMessage} req
 */
function requestHead(req) {
  let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    head += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`
  return `${head}\r\n`
}

/** @param {unknown} error what connecting or forwarding failed with (an Error) */
function badGatewayBody(error) {
  return JSON.stringify({ error: { code: 'bad_gateway', message: /** @type {Error} */ (error).message } })
}

/**
 * Starts the proxy on `host:port` (port 0 picks a free one) in front of `targets`. Each request and each
 * WebSocket upgrade goes to the next target in turn; a target that refuses the TCP connection is skipped
 * for that attempt, and when every target refuses the client gets 502. Requests and upgrades take turns
 * separately, so the few requests of a page load never decide where the page's WebSocket lands: two
 * sockets opened one after the other always reach different targets. HTTP responses carry
 * `x-symphony-backend: <target port>`.
 * @param {{ port: number, host?: string, targets: ProxyTarget[] }} options
 * @returns {Promise<RoundRobinProxy>}
 */
export function startRoundRobinProxy({ port, host = '127.0.0.1', targets }) {
  if (!Array.isArray(targets) || targets.length === 0) {
    return Promise.reject(new Error('startRoundRobinProxy: at least one target is needed'))
  }
  const next = { http: 0, upgrade: 0 }
  // Every socket the proxy holds (client connections and upstream tunnels), destroyed by close().
  /** @type {Set<Duplex>} */
  const sockets = new Set()
  const track = (/** @type {Duplex} */ socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  }

  /**
   * A TCP connection to the next target in turn that accepts one; rejects when none does.
   * @param {'http' | 'upgrade'} kind
   * @returns {Promise<{ socket: Socket, target: ProxyTarget }>}
   */
  function connectNext(kind) {
    const first = next[kind]
    next[kind] = (first + 1) % targets.length
    return new Promise((resolve, reject) => {
      /** @type {string[]} */
      const failures = []
      const attempt = (/** @type {number} */ n) => {
        if (n === targets.length) {
          reject(new Error(`no backend accepted the connection (${failures.join('; ')})`))
          return
        }
        const target = /** @type {ProxyTarget} */ (targets[(first + n) % targets.length])
        const socket = connect({ host: target.host, port: target.port })
        socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new Error('connect timed out')))
        const onError = (/** @type {NodeJS.ErrnoException} */ error) => {
          socket.destroy()
          failures.push(`${target.host}:${target.port} ${error.code ?? error.message}`)
          attempt(n + 1)
        }
        socket.once('error', onError)
        socket.once('connect', () => {
          socket.removeListener('error', onError)
          socket.setTimeout(0)
          track(socket)
          resolve({ socket, target })
        })
      }
      attempt(0)
    })
  }

  /**
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   */
  async function onRequest(req, res) {
    let connected
    try {
      connected = await connectNext('http')
    } catch (error) {
      res.writeHead(502, { 'content-type': 'application/json' }).end(badGatewayBody(error))
      return
    }
    const { socket, target } = connected
    if (res.destroyed) {
      socket.destroy()
      return
    }
    const upstream = request({
      host: target.host,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: endToEndHeaders(req.headers),
      createConnection: () => socket,
    })
    upstream.once('response', (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, {
        ...endToEndHeaders(upstreamRes.headers),
        'x-symphony-backend': String(target.port),
      })
      upstreamRes.pipe(res)
      upstreamRes.once('error', () => res.destroy())
    })
    upstream.once('error', (error) => {
      if (res.headersSent) res.destroy()
      else res.writeHead(502, { 'content-type': 'application/json' }).end(badGatewayBody(error))
    })
    // The client gave up (or the proxy is closing): drop the upstream request too.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.once('error', () => upstream.destroy())
    req.pipe(upstream)
  }

  /**
   * @param {IncomingMessage} req
   * @param {Socket} client
   * @param {Buffer} head
   */
  async function onUpgrade(req, client, head) {
    client.on('error', () => client.destroy())
    let connected
    try {
      connected = await connectNext('upgrade')
    } catch (error) {
      const body = badGatewayBody(error)
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      )
      return
    }
    const upstream = connected.socket
    if (client.destroyed) {
      upstream.destroy()
      return
    }
    const destroyBoth = () => {
      client.destroy()
      upstream.destroy()
    }
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true)
      socket.once('error', destroyBoth)
      socket.once('close', destroyBoth)
    }
    upstream.write(requestHead(req))
    if (head.length > 0) upstream.write(head)
    client.pipe(upstream)
    upstream.pipe(client)
  }

  const server = createServer((req, res) => {
    onRequest(req, res)
  })
  server.on('upgrade', (req, socket, head) => {
    onUpgrade(req, /** @type {Socket} */ (socket), head) // a net.Socket, which Node types as a Duplex
  })
  server.on('connection', track)
  server.on('clientError', (_error, socket) => socket.destroy())

  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.removeListener('error', reject)
      /** @type {Promise<void> | undefined} */
      let closing
      resolve({
        port: /** @type {AddressInfo} */ (server.address()).port,
        close() {
          closing ??= new Promise((done) => {
            server.close(() => done())
            for (const socket of sockets) socket.destroy()
          })
          return closing
        },
      })
    })
  })
}
