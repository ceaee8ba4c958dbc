import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import * as Y from 'yjs'
import { ARTIFACTS, launchChromium } from '../../server/test/helpers/browser.js'
import { connectSynced, destroyClients, uniqueRoom } from '../../server/test/helpers/clients.js'
import { DASHBOARD_TOKEN, type DashboardStack, startDashboardStack } from './helpers/dashboard-stack.js'

/** Where the operations view's screenshot goes, to look at by eye. */
const SCREENSHOT = '/tmp/symphony-dashboard-operations.png'

/** The dashboard page in Chromium, over real Postgres fed by a real sync server. */
describe('dashboard page in Chromium', () => {
  let stack: DashboardStack
  let browser: Browser

  before(async () => {
    stack = await startDashboardStack()
    browser = await launchChromium()
  })
  after(async () => {
    destroyClients()
    await browser.close()
    await stack.stop()
  })

  async function signIn(token: string): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage()
    await page.goto(`${stack.base}/`)
    await page.locator('#login').waitFor()
    await page.fill('#login input[name=token]', token)
    await page.click('#login button[type=submit]')
    return page
  }

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
    const client = await connectSynced(stack.sync.wsUrl, room)
    client.doc.getMap('m').set('k', 'v')
    const closed = new Promise<number>((resolve) =>
      client.provider.once('connection-close', (e) => resolve(e?.code ?? 0)),
    )
    const link = page.locator(`a[href="#/rooms/${room}"]`)
    await link.waitFor()
    await link.click()
    await page.waitForFunction(() => document.querySelector('#room-json')?.textContent?.includes('"v"'))
    const dialogs: string[] = []
    page.once('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.accept()
    })
    await page.click('#room-delete')
    assert.equal(await closed, 4404, 'the client is closed with RoomDeleted')
    await page.locator('#overview').waitFor()
    await link.waitFor({ state: 'detached' })
    assert.match(dialogs[0] ?? '', /Delete the room/)
    await page.context().close()
  })
})
