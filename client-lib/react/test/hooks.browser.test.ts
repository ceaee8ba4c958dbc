import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import { uniqueRoom } from '@symphony/test-helpers/clients'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { build } from 'esbuild'
import type { Browser, Page } from 'playwright-core'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'
const APP = fileURLToPath(new URL('./fixtures/hooks-app.tsx', import.meta.url))

/** The fixture app, bundled as an app's bundler would, served on its own origin. */
async function serveApp(serverUrl: string): Promise<{ url: string; server: Server }> {
  const result = await build({
    entryPoints: [APP],
    bundle: true,
    format: 'esm',
    jsx: 'automatic',
    define: { SERVER_URL: JSON.stringify(serverUrl), 'process.env.NODE_ENV': '"development"' },
    write: false,
    logLevel: 'silent',
  })
  const html = `<!doctype html><div id="root"></div><script type="module">${result.outputFiles[0]?.text}</script>`
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html' })
    response.end(html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }
}

describe('@symphony/react hooks in real React (StrictMode) in Chromium against a real server', () => {
  let t: TestServer
  let browser: Browser
  let app: { url: string; server: Server }
  before(async () => {
    t = await startTestServer({ apiSecret: API_SECRET })
    browser = await launchChromium()
    app = await serveApp(t.wsUrl)
  })
  after(async () => {
    app?.server.close()
    await browser?.close()
    await t?.stop()
  })

  const errors: string[] = []
  async function open(room: string, name: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage()
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${app.url}?room=${encodeURIComponent(room)}&name=${name}`)
    await page.waitForSelector('#status[data-status="synced"][data-synced="true"]')
    return page
  }
  const text = (page: Page, selector: string, value: string) =>
    page.waitForFunction(
      ([s, v]) => document.querySelector(s as string)?.textContent === v,
      [selector, value],
    )
  const items = (page: Page) => page.locator('#todos li').allTextContents()

  it('shares a list edited on both pages, shows presence, and undoes only my own change', async () => {
    const room = uniqueRoom('react todos')
    const ada = await open(room, 'ada')
    const bob = await open(room, 'bob')
    await text(ada, '#others', 'bob')
    await text(bob, '#others', 'ada')
    assert.equal(await ada.textContent('#me'), 'ada')

    await ada.click('#add')
    await text(bob, '#todos', 'ada-0')
    await bob.click('#add')
    await text(ada, '#todos', 'ada-0bob-1')
    assert.deepEqual(await items(bob), ['ada-0', 'bob-1'])

    await ada.click('#undo')
    await text(ada, '#todos', 'bob-1')
    await text(bob, '#todos', 'bob-1')
    assert.equal(await ada.locator('#undo').isDisabled(), true, 'nothing of mine left to undo')
    assert.equal(await bob.locator('#undo').isDisabled(), false, 'bob can still undo his')
    await ada.waitForSelector('#status[data-sync="synchronized"]')
    assert.deepEqual(errors, [])
    await Promise.all([ada.context().close(), bob.context().close()])
  })

  it('re-renders a component only when what it reads changes', async () => {
    const room = uniqueRoom('react renders')
    const ada = await open(room, 'ada')
    const bob = await open(room, 'bob')
    await text(ada, '#others', 'bob')
    const renders = async (selector: string) => Number(await ada.getAttribute(selector, 'data-renders'))
    const settingsBefore = await renders('#settings')
    const othersBefore = await renders('#others')
    for (let i = 0; i < 3; i++) await bob.click('#add') // the list, not the settings
    for (let i = 0; i < 3; i++) await bob.click('#other-map') // another map than the settings
    for (let i = 0; i < 3; i++) await bob.click('#move') // bob's cursor, not his name
    // Sent after the rest on the same socket: once Ada has it, she has had the rest too.
    await bob.click('#add')
    await text(ada, '#todos', 'bob-0bob-1bob-2bob-3')
    assert.equal(
      await renders('#settings'),
      settingsBefore,
      'useMap/useText ignored list and other map changes',
    )
    assert.equal(await renders('#others'), othersBefore, 'useOthers(names) ignored cursor moves')
    // The counter counts: a change to the settings map does re-render them.
    await bob.click('#theme')
    await text(ada, '#settings', 'bob-3 / ')
    assert.ok((await renders('#settings')) > settingsBefore)
    await Promise.all([ada.context().close(), bob.context().close()])
  })

  it('shows offline while the network is gone, keeps edits, and syncs them when it is back', async () => {
    const room = uniqueRoom('react offline')
    const ada = await open(room, 'ada')
    const bob = await open(room, 'bob')
    await ada.context().setOffline(true)
    await ada.waitForSelector('#status[data-status="offline"][data-synced="false"]')
    await ada.click('#add')
    await ada.waitForSelector('#status[data-sync="synchronizing"]')
    await ada.context().setOffline(false)
    await ada.waitForSelector('#status[data-status="synced"]')
    await text(bob, '#todos', 'ada-0')
    await ada.waitForSelector('#status[data-sync="synchronized"]')
    await Promise.all([ada.context().close(), bob.context().close()])
  })

  it('sends broadcast events with useBroadcastEvent and hears them with useEventListener', async () => {
    const room = uniqueRoom('react events')
    const ada = await open(room, 'ada')
    const bob = await open(room, 'bob')
    await text(ada, '#others', 'bob')
    await ada.click('#cheer')
    await text(bob, '#cheers', 'ada')
    await bob.click('#cheer')
    await text(ada, '#cheers', 'bob')
    assert.equal(await bob.textContent('#cheers'), 'ada', 'not echoed to the sender')
    await Promise.all([ada.context().close(), bob.context().close()])
  })

  it('reports room errors through useErrorListener, and never says synchronized before a first sync', async () => {
    const page = await open(uniqueRoom('react errors'), 'ada')
    await text(page, '#failing-errors', 'TOKEN_UNAVAILABLE')
    const failing = page.locator('#failing-status')
    assert.notEqual(await failing.getAttribute('data-status'), 'failed', 'a getToken outage is retried')
    assert.equal(await failing.getAttribute('data-sync'), 'synchronizing')
    await text(page, '#denied-errors', 'AUTH_DENIED')
    await page.waitForSelector('#denied-status[data-status="failed"][data-synced="false"]')
    assert.equal(await page.locator('#denied-status').getAttribute('data-sync'), 'synchronizing')
    await page.context().close()
  })

  it('shows an empty room with Undo disabled once the room is deleted on the server', async () => {
    const room = uniqueRoom('react deleted')
    const ada = await open(room, 'ada')
    await ada.click('#add')
    await ada.click('#add')
    await text(ada, '#todos', 'ada-0ada-1')
    await ada.waitForSelector('#status[data-sync="synchronized"]')
    assert.equal(await ada.locator('#undo').isDisabled(), false)
    const deleted = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${API_SECRET}` },
    })
    assert.equal(deleted.status, 204)
    await ada.waitForSelector('#status[data-status="failed"]')
    await text(ada, '#todos', '')
    await ada.waitForSelector('#undo:disabled')
    assert.deepEqual(errors, [])
    await ada.context().close()
  })
})
