import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ARTIFACTS, launchChromium } from '@symphony/test-helpers/browser'
import { connectSynced, destroyClients, eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { addShape, openWhiteboard } from '@symphony/test-helpers/whiteboard'
import type { Browser, Page } from 'playwright-core'
import * as Y from 'yjs'
import { DASHBOARD_TOKEN, type DashboardStack, startDashboardStack } from './helpers/dashboard-stack.js'

/** Where the operations view's screenshot goes, to look at by eye. */
const SCREENSHOT = '/tmp/symphony-dashboard-operations.png'

/** The demo whiteboard (built on @symphony/client), served by the stack's sync server. */
const WHITEBOARD = fileURLToPath(new URL('../../server/dist/demo/', import.meta.url))

/** A name the browser resolves to 127.0.0.1, standing for the load balancer's. */
const LOAD_BALANCER = 'dashboard.alb.example'

/** A name the browser resolves to 127.0.0.1, as a DNS rebinding attacker's would after the switch. */
const REBOUND = 'rebound.example'

/**
 * Puts a client with a document in `room`, opens the room from the list on `page` and deletes it
 * there, accepting the confirmation: the code the client was closed with, and the dialog's text.
 */
async function deleteOnItsPage(page: Page, stack: DashboardStack, room: string) {
  const client = await connectSynced(stack.sync.wsUrl, room)
  client.doc.getMap('m').set('k', 'v')
  const closed = new Promise<number>((resolve) =>
    client.provider.once('connection-close', (e) => resolve(e?.code ?? 0)),
  )
  await page.locator(`a[href="#/rooms/${room}"]`).click()
  await page.waitForFunction(() => document.querySelector('#room-json')?.textContent?.includes('"v"'))
  let dialog = ''
  page.once('dialog', (shown) => {
    dialog = shown.message()
    void shown.accept()
  })
  await page.click('#room-delete')
  return { code: await closed, dialog }
}

/** The dashboard page in Chromium, over real Postgres fed by a real sync server. */
describe('dashboard page in Chromium', () => {
  let stack: DashboardStack
  let browser: Browser

  before(async () => {
    stack = await startDashboardStack({ demoFolder: WHITEBOARD })
    browser = await launchChromium([`--host-resolver-rules=MAP ${LOAD_BALANCER} 127.0.0.1`])
  })
  after(async () => {
    destroyClients()
    await browser.close()
    await stack.stop()
  })

  async function signIn(token: string, base = stack.base): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage()
    await page.goto(`${base}/`)
    await page.locator('#login').waitFor()
    await page.fill('#login input[name=token]', token)
    await page.click('#login button[type=submit]')
    return page
  }

  it('signs in and deletes at a name over plain HTTP, as behind the load balancer without a certificate', async () => {
    // No Sec-Fetch-Site here (plain HTTP, not loopback): the page's own Origin vouches for its posts.
    const page = await signIn(DASHBOARD_TOKEN, `http://${LOAD_BALANCER}:${new URL(stack.base).port}`)
    await page.locator('#live[data-state="live"]').waitFor()
    const room = uniqueRoom('behind-alb')
    await connectSynced(stack.sync.wsUrl, room)
    const readable = async () =>
      (await page.evaluate(async (r) => (await fetch(`/api/rooms/${r}/state`)).status, room)) === 200
    await eventually(readable, 'the dashboard reads the room')
    const deleted = await page.evaluate(
      async (r) => (await fetch(`/api/rooms/${r}`, { method: 'DELETE' })).status,
      room,
    )
    assert.equal(deleted, 204)
    await page.context().close()
  })

  /** The whiteboard in a browser profile of its own (another person's laptop), synced to `room`. */
  const openBoard = (room: string, name: string): Promise<Page> =>
    openWhiteboard(browser, stack.sync.httpUrl, room, name)

  /** Waits until `page` shows `count` shapes of each kind. */
  async function showsShapes(page: Page, counts: { rect: number; ellipse: number }): Promise<void> {
    await page.waitForFunction(
      (want) =>
        document.querySelectorAll('rect[data-shape-id]').length === want.rect &&
        document.querySelectorAll('ellipse[data-shape-id]').length === want.ellipse,
      counts,
    )
  }

  it('restores a saved version from the room page, asked first: two whiteboards on the room show it at once', async () => {
    const room = uniqueRoom('restore')
    const [alice, bob] = [await openBoard(room, 'Alice'), await openBoard(room, 'Bob')]
    await addShape(alice, 'rect', [120, 120])
    await showsShapes(bob, { rect: 1, ellipse: 0 })
    await stack.sync.server.manager.save(room) // the version to go back to: one rectangle
    await addShape(bob, 'ellipse', [400, 300])
    await showsShapes(alice, { rect: 1, ellipse: 1 })
    await stack.sync.server.manager.save(room)
    const page = await signIn(DASHBOARD_TOKEN)
    await page.locator('#live[data-state="live"]').waitFor()
    await page.goto(`${stack.base}/#/rooms/${encodeURIComponent(room)}`)
    const rows = page.locator('#room-versions tbody tr')
    await eventually(async () => (await rows.count()) === 2, 'both saves listed')
    await rows.nth(1).getByRole('button', { name: 'View' }).click()
    await page.waitForFunction(() =>
      document.querySelector('#version-title')?.textContent?.startsWith('Version saved'),
    )
    let dialog = ''
    page.once('dialog', (shown) => {
      dialog = shown.message()
      void shown.accept()
    })
    await page.click('#version-restore')
    await page.waitForFunction(() =>
      document.querySelector('#version-outcome')?.textContent?.startsWith('Restored'),
    )
    assert.match(dialog, new RegExp(`Restore "${room}" to the version saved`))
    await Promise.all([alice, bob].map((whiteboard) => showsShapes(whiteboard, { rect: 1, ellipse: 0 })))
    await eventually(async () => (await rows.count()) === 3, 'the restore is a version of its own')
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-versions.png'), fullPage: true })
    for (const opened of [page, alice, bob]) await opened.context().close()
  })

  it('refuses a wrong token on the sign-in form', async () => {
    const page = await signIn('not-the-dashboard-token')
    await page.locator('#login-error').waitFor()
    assert.equal(await page.locator('#overview').isHidden(), true)
    await page.context().close()
  })

  it('shows a room appear live when a client joins, then its connections and shapes as JSON', async () => {
    const page = await signIn(DASHBOARD_TOKEN)
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.locator('#live[data-state="live"]').waitFor()
    const room = uniqueRoom('board')
    // No reload from here on: the page learns of the room from the event stream.
    const client = await connectSynced(stack.sync.wsUrl, room)
    client.doc.transact(() => {
      const shape = new Y.Map<string | number>()
      shape.set('kind', 'rect')
      shape.set('color', '#3b82f6')
      client.doc.getMap('shapes').set('shape-1', shape)
    })
    const count = page.locator(`[data-room-connections="${room}"]`)
    await count.waitFor()
    assert.equal(await count.textContent(), '1')
    await page.click(`a[href="#/rooms/${room}"]`)
    await page.waitForFunction(() => document.querySelector('#room-json')?.textContent?.includes('"rect"'))
    assert.equal(await page.locator('#room-name').textContent(), room)
    assert.equal(await page.locator('#room-connections').textContent(), '1')
    assert.match((await page.locator('#room-json').textContent()) ?? '', /shape-1.*kind: "rect"/)
    // A second person joins: the count on the open room page follows, live.
    await connectSynced(stack.sync.wsUrl, room)
    await page.waitForFunction(() => document.querySelector('#room-connections')?.textContent === '2')
    // ...and the event makes the page re-read the room: both sessions listed.
    await page.waitForFunction(() => document.querySelectorAll('#room-sessions tbody tr').length === 2)
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-room.png') })
    assert.deepEqual(errors, [])
    await page.context().close()
  })

  it('shows a room whose name has slashes, markup and emoji as text, on its own page, with its document', async () => {
    const page = await signIn(DASHBOARD_TOKEN)
    await page.locator('#live[data-state="live"]').waitFor()
    const room = `${uniqueRoom('team')}/<img src=x onerror="window.pwned=1"> Straße 😀 %41`
    const client = await connectSynced(stack.sync.wsUrl, encodeURIComponent(room))
    client.doc.getMap('notes').set('n', 'hello')
    const link = page.locator(`a[href="#/rooms/${encodeURIComponent(room)}"]`)
    await link.waitFor()
    assert.equal(await link.textContent(), room)
    await link.click()
    await page.waitForFunction(() => document.querySelector('#room-json')?.textContent?.includes('hello'))
    assert.equal(await page.locator('#room-name').textContent(), room)
    assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined)
    await page.context().close()
  })

  it('charts every server over time with uPlot, and sorts the room list by a clicked column', async () => {
    const other = await stack.addSyncServer()
    const prefix = uniqueRoom('sorted')
    const names = ['m', 'a', 'z'].map((letter) => `${prefix}-${letter}`)
    const typists = []
    for (const [i, name] of names.entries()) {
      const url = i === 1 ? other.sync.wsUrl : stack.sync.wsUrl
      const typist = await connectSynced(url, name)
      await connectSynced(url, name) // someone receiving, so messages go out too
      typists.push(typist)
    }
    const page = await signIn(DASHBOARD_TOKEN)
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.locator('#live[data-state="live"]').waitFor()
    const servers = [stack.serverId, other.serverId].sort()
    // Each chart redraws on the servers' `samples` events; type until both servers are drawn.
    const legend = (chart: string) =>
      page.locator(`#${chart} .u-legend tr.u-series:not(:first-child) .u-label`).allTextContents()
    const deadline = Date.now() + 20_000
    while ((await legend('chart-cpu')).length < 2 || (await legend('chart-messages')).length < 2) {
      if (Date.now() > deadline)
        throw new Error(`charts never showed both servers: ${await legend('chart-cpu')}`)
      for (const typist of typists) typist.doc.getText('t').insert(0, 'typing ')
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    for (const chart of ['chart-connections', 'chart-rooms', 'chart-errors', 'chart-cpu', 'chart-memory']) {
      assert.deepEqual((await legend(chart)).sort(), servers, `${chart}: one labelled series per server`)
      assert.equal(await page.locator(`#${chart} canvas`).count(), 1, `${chart} is drawn on a canvas`)
    }
    assert.deepEqual(await legend('chart-messages'), ['in', 'out'])
    assert.deepEqual(await legend('chart-traffic'), ['in', 'out'])
    // A time axis: pointing at the chart shows the time there in the legend (the axes are on the canvas).
    const plotArea = page.locator('#chart-cpu .u-over')
    const box = await plotArea.boundingBox()
    assert.ok(box)
    await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2)
    const time = await page.locator('#chart-cpu .u-legend tr.u-series:first-child .u-value').textContent()
    assert.match(time ?? '', /\d{1,2}:\d{2}/)

    await page.fill('#search', prefix)
    const rows = () => page.locator('#rooms tbody tr td:first-child').allTextContents()
    await page.waitForFunction(() => document.querySelectorAll('#rooms tbody tr').length === 3)
    await page.click('#rooms th[data-sort="name"] button')
    await page.locator('#rooms th[data-sort="name"][aria-sort="ascending"]').waitFor()
    await page.waitForFunction(
      (first) => document.querySelector('#rooms tbody td')?.textContent === first,
      names[1],
    )
    assert.deepEqual(await rows(), [...names].sort())
    assert.equal(await page.locator('#rooms th[aria-sort]').count(), 1, 'only the sorted column says so')
    await page.click('#rooms th[data-sort="name"] button')
    await page.locator('#rooms th[data-sort="name"][aria-sort="descending"]').waitFor()
    await page.waitForFunction(
      (first) => document.querySelector('#rooms tbody td')?.textContent === first,
      names[2],
    )
    assert.deepEqual(await rows(), [...names].sort().reverse())

    await page.fill('#search', '')
    await page.waitForTimeout(300)
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-operations.png'), fullPage: true })
    assert.deepEqual(errors, [])
    await page.context().close()
  })

  it('deletes a room from its page after a confirmation: its clients are closed and it leaves the list', async () => {
    const page = await signIn(DASHBOARD_TOKEN)
    await page.locator('#live[data-state="live"]').waitFor()
    const room = uniqueRoom('doomed')
    const { code, dialog } = await deleteOnItsPage(page, stack, room)
    assert.equal(code, 4404, 'the client is closed with RoomDeleted')
    await page.locator('#overview').waitFor()
    await page.locator(`a[href="#/rooms/${room}"]`).waitFor({ state: 'detached' })
    assert.match(dialog, /Delete the room/)
    await page.context().close()
  })
})

/** The token-less dashboard (`npm start`'s) in Chromium: used at localhost, and attacked by DNS rebinding. */
describe('token-less dashboard page in Chromium', () => {
  let stack: DashboardStack
  let browser: Browser
  let port: string

  before(async () => {
    stack = await startDashboardStack({}, { token: null })
    port = new URL(stack.base).port
    browser = await launchChromium([
      `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`,
      // Chromium's own Local Network Access checks stop this page's requests to a loopback
      // address; other browsers have none, and Chromium's can be switched off. Test without them.
      '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests',
    ])
  })
  after(async () => {
    destroyClients()
    await browser.close()
    await stack.stop()
  })

  it('works at localhost: no sign-in, rooms live, and a room deleted from its page', async () => {
    const page = await (await browser.newContext()).newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`http://localhost:${port}/`)
    await page.locator('#live[data-state="live"]').waitFor()
    const { code } = await deleteOnItsPage(page, stack, uniqueRoom('local'))
    assert.equal(code, 4404, 'deleted: its client is closed with RoomDeleted')
    assert.deepEqual(errors, [])
    await page.context().close()
  })

  it('gives a page that rebinds its own name to the dashboard nothing to read or delete', async () => {
    const room = uniqueRoom('target')
    const client = await connectSynced(stack.sync.wsUrl, room)
    let closedBy = 0
    client.provider.once('connection-close', (e) => {
      closedBy = e?.code ?? -1
    })
    const readable = async () =>
      (await fetch(`${stack.base}/api/rooms/${encodeURIComponent(room)}/state`)).status === 200
    await eventually(readable, 'the dashboard reads the room') // a target worth attacking
    const page = await (await browser.newContext()).newPage()
    // The attacker's page, served from its own name before the switch; from here on that name
    // resolves to 127.0.0.1, so its requests reach the dashboard as same-origin ones.
    const attacker = `http://${REBOUND}:${port}/`
    await page.route(attacker, (route) => route.fulfill({ contentType: 'text/html', body: '<p>hello</p>' }))
    await page.goto(attacker)
    const statuses = await page.evaluate(async (target) => {
      const read = await fetch('/api/rooms')
      const deletion = await fetch(`/api/rooms/${encodeURIComponent(target)}`, { method: 'DELETE' })
      return { read: read.status, deletion: deletion.status, code: (await read.json()).error?.code }
    }, room)
    assert.deepEqual(statuses, { read: 421, deletion: 421, code: 'HOST_NOT_ALLOWED' })
    assert.equal(await readable(), true, 'the room is still there')
    assert.equal(closedBy, 0, 'its client was never closed')
    await page.context().close()
  })
})
