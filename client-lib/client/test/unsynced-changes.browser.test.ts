import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import { uniqueRoom } from '@symphony/test-helpers/clients'
import { TcpLink } from '@symphony/test-helpers/tcp-link'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { build } from 'esbuild'
import type { Browser } from 'playwright-core'

const CLIENT_LIB = fileURLToPath(new URL('..', import.meta.url))

/** A page that shows the room's unsynced state and adds an item on `window.add(text)`. */
function appSource(serverUrl: string, room: string): string {
  return `
    import { createClient } from '@symphony/client'
    const room = createClient({ url: '${serverUrl}', reconnect: { baseDelayMs: 20, maxDelayMs: 100 } }).enter('${room}')
    const show = () => {
      document.querySelector('#unsynced').textContent = String(room.hasUnsyncedChanges())
      document.querySelector('#items').textContent = room.list('items').toArray().join(',')
      document.querySelector('#status').textContent = room.status
    }
    room.on('unsynced', show)
    room.on('status', show)
    room.list('items').observe(show)
    window.add = (text) => room.list('items').push([text])
    show()
  `
}

describe('hasUnsyncedChanges in Chromium, with the offline store', () => {
  let t: TestServer
  let browser: Browser
  before(async () => {
    t = await startTestServer()
    browser = await launchChromium()
  })
  after(async () => {
    await browser.close()
    await t.stop()
  })

  it('counts edits made offline and kept across a reload until the server holds them', async () => {
    const link = await TcpLink.open(t.server.port)
    const room = uniqueRoom('unsynced-browser')
    const bundled = await build({
      stdin: {
        contents: appSource(`ws://127.0.0.1:${link.port}`, room),
        resolveDir: CLIENT_LIB,
        loader: 'js',
      },
      bundle: true,
      format: 'esm',
      write: false,
      logLevel: 'silent',
    })
    const html = `<!doctype html><p id="status"></p><p id="unsynced"></p><p id="items"></p><script type="module">${bundled.outputFiles[0]?.text}</script>`
    const app = createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html' })
      response.end(html)
    })
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    const page = await (await browser.newContext()).newPage()
    await page.goto(`http://127.0.0.1:${(app.address() as AddressInfo).port}/`)
    const text = (selector: string, value: string) =>
      page.waitForFunction(
        ([s, v]) => document.querySelector(s as string)?.textContent === v,
        [selector, value],
      )

    await text('#status', 'synced')
    await text('#unsynced', 'false')
    link.cut()
    await text('#status', 'offline')
    await page.evaluate(() => (window as unknown as { add(text: string): void }).add('offline'))
    await text('#unsynced', 'true')
    await page.reload()
    await text('#items', 'offline') // from IndexedDB, the server still unreachable
    await text('#unsynced', 'true')
    link.restore()
    await text('#status', 'synced')
    await text('#unsynced', 'false')
    assert.deepEqual(t.server.manager.loadedRoom(room)?.doc.getArray('items').toArray(), ['offline'])
    await page.context().close()
    app.close()
    link.close()
  })
})
