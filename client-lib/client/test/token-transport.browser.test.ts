import assert from 'node:assert/strict'
import { createServer as createHttpServer } from 'node:http'
import { type AddressInfo, connect, createServer, type Server } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import { eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { signToken, TEST_SECRET } from '@symphony/test-helpers/tokens'
import { build } from 'esbuild'
import type { Browser } from 'playwright-core'

const CLIENT_LIB = fileURLToPath(new URL('..', import.meta.url))

/**
 * A TCP relay in front of the sync server that keeps every byte the browser sends it, as a load
 * balancer sees them: `requestLines()` are what an access log records (method, URL, version).
 */
class RecordingRelay {
  readonly #sent: Buffer[][] = []
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async open(targetPort: number): Promise<RecordingRelay> {
    const server = createServer()
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    )
    const relay = new RecordingRelay(server, port)
    server.on('connection', (client) => {
      const chunks: Buffer[] = []
      relay.#sent.push(chunks)
      const upstream = connect(targetPort, '127.0.0.1')
      client.on('data', (chunk: Buffer) => chunks.push(chunk))
      for (const socket of [client, upstream]) {
        socket.on('error', () => {})
        socket.on('close', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream)
      upstream.pipe(client)
    })
    return relay
  }

  /** Everything the browser sent, one string per TCP connection. */
  streams(): string[] {
    return this.#sent.map((chunks) => Buffer.concat(chunks).toString('latin1'))
  }

  /** The request line of every HTTP request and upgrade, on every connection. */
  requestLines(): string[] {
    return this.streams().flatMap((stream) =>
      [...stream.matchAll(/(?:^|\r\n)([A-Z]+ [^\r\n ]+ HTTP\/1\.1)\r\n/g)].map((match) => match[1] ?? ''),
    )
  }

  close(): void {
    this.server.close()
  }
}

/** A page on its own origin that enters `room` with `token` and shows status, error and `m.k`. */
function appSource(serverUrl: string, room: string, token: string): string {
  return `
    import { createClient } from '@symphony/client'
    const client = createClient({
      url: '${serverUrl}',
      getToken: async () => '${token}',
      reconnect: { baseDelayMs: 20, maxDelayMs: 100 },
    })
    const room = client.enter('${room}')
    const show = () => {
      document.querySelector('#status').textContent = room.status
      document.querySelector('#value').textContent = String(room.map('m').get('k') ?? '')
    }
    room.on('status', show)
    room.on('error', (error) => { document.querySelector('#error').textContent = error.code })
    room.map('m').observe(show)
    window.edit = (value) => room.map('m').set('k', value)
    show()
  `
}

describe('@symphony/client in Chromium keeps its token out of every URL', () => {
  let t: TestServer
  let browser: Browser
  let relay: RecordingRelay
  before(async () => {
    t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    relay = await RecordingRelay.open(t.server.port)
    browser = await launchChromium()
  })
  after(async () => {
    await browser.close()
    relay.close()
    await t.stop()
  })

  /** Serves a page bundling `source` on an origin of its own; resolves to its address. */
  async function servePage(source: string): Promise<{ url: string; close(): void }> {
    const bundled = await build({
      stdin: { contents: source, resolveDir: CLIENT_LIB, loader: 'js' },
      bundle: true,
      format: 'esm',
      write: false,
      logLevel: 'silent',
    })
    const html = `<!doctype html><p id="status"></p><p id="error"></p><p id="value"></p><script type="module">${bundled.outputFiles[0]?.text}</script>`
    const app = createHttpServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html' })
      response.end(html)
    })
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    return { url: `http://127.0.0.1:${(app.address() as AddressInfo).port}/`, close: () => app.close() }
  }

  it('syncs with the token in Sec-WebSocket-Protocol, and asks the access check with Authorization', async () => {
    const serverUrl = `ws://127.0.0.1:${relay.port}`
    const room = uniqueRoom('token-header')
    const token = await signToken({ room, access: 'rw' })
    const refusedRoom = uniqueRoom('token-refused')
    const foreignToken = await signToken({ room: 'another-room', access: 'rw' })
    const pages = [await servePage(appSource(serverUrl, room, token))]
    pages.push(await servePage(appSource(serverUrl, refusedRoom, foreignToken)))
    const context = await browser.newContext()
    const errors: string[] = []
    const [page, refusedPage] = await Promise.all(
      pages.map(async ({ url }) => {
        const tab = await context.newPage()
        tab.on('pageerror', (error) => errors.push(error.message))
        await tab.goto(url)
        return tab
      }),
    )
    assert.ok(page && refusedPage)
    const text = (tab: typeof page, selector: string, value: string) =>
      tab.waitForFunction(
        ([s, v]) => document.querySelector(s as string)?.textContent === v,
        [selector, value],
      )

    await text(page, '#status', 'synced')
    await page.evaluate(() => (window as unknown as { edit(value: string): void }).edit('from chromium'))
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getMap('m').get('k') === 'from chromium',
      'the edit reaches the server (the token granted rw)',
    )
    // The refused token is told apart from an outage by the access check, across origins.
    await text(refusedPage, '#error', 'AUTH_REFUSED')
    assert.deepEqual(errors, [])

    const lines = relay.requestLines()
    const upgrade = lines.find((line) => line.startsWith(`GET /${room}?`))
    assert.ok(upgrade, `the upgrade went through the relay: ${lines.join(' | ')}`)
    assert.ok(
      lines.some((line) => line.startsWith(`OPTIONS /rooms/${refusedRoom}/access `)),
      'a preflight',
    )
    assert.ok(
      lines.some((line) => line.startsWith(`GET /rooms/${refusedRoom}/access `)),
      'the access check',
    )
    for (const secret of [token, foreignToken]) {
      const signature = secret.split('.')[2] ?? secret
      const leaks = lines.filter((line) => line.includes(signature) || /token=/i.test(line))
      assert.deepEqual(leaks, [], 'no request line carries a token')
    }
    // The tokens did travel, in the headers the load balancer does not log.
    const sent = relay.streams().join('\n')
    assert.match(sent, new RegExp(`Sec-WebSocket-Protocol: symphony, symphony-token\\.${token}\\r\\n`, 'i'))
    assert.match(sent, new RegExp(`Authorization: Bearer ${foreignToken}\\r\\n`, 'i'))
    await context.close()
    for (const served of pages) served.close()
  })
})
