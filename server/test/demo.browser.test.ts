import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { ARTIFACTS, launchChromium } from './helpers/browser.js'
import { uniqueRoom } from './helpers/clients.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'

const DEMO = fileURLToPath(new URL('../dist/demo/', import.meta.url))

describe('demo whiteboard in Chromium', () => {
  let t: TestServer
  let browser: Browser
  before(async () => {
    t = await startTestServer({ demoFolder: DEMO })
    browser = await launchChromium()
  })
  after(async () => {
    await browser.close()
    await t.stop()
  })

  async function openTab(room: string, name: string): Promise<{ page: Page; errors: string[] }> {
    const page = await (await browser.newContext({ viewport: { width: 1000, height: 650 } })).newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${t.httpUrl}/?room=${room}&name=${name}`)
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'synced')
    return { page, errors }
  }

  it('two tabs see each other’s shapes and cursors, and a closed tab’s cursor leaves', async () => {
    const room = uniqueRoom('demo')
    const alice = await openTab(room, 'Alice')
    const bob = await openTab(room, 'Bob')
    const canvas = await alice.page.locator('#canvas').boundingBox()
    assert.ok(canvas)
    // Alice drags out a rectangle.
    await alice.page.mouse.move(canvas.x + 100, canvas.y + 100)
    await alice.page.mouse.down()
    await alice.page.mouse.move(canvas.x + 260, canvas.y + 220, { steps: 8 })
    await alice.page.mouse.up()
    await bob.page.waitForSelector('rect[data-shape-id]')
    const rect = await bob.page
      .locator('rect[data-shape-id]')
      .evaluate((el) => ['x', 'y', 'width', 'height'].map((k) => el.getAttribute(k)).join(','))
    assert.equal(rect, '100,100,160,120')
    // Bob picks the ellipse tool and clicks one into place.
    await bob.page.click('[data-kind=ellipse]')
    await bob.page.mouse.click(canvas.x + 500, canvas.y + 300)
    await alice.page.waitForSelector('ellipse[data-shape-id]')
    // Alice's cursor shows on Bob's page with her name.
    await alice.page.mouse.move(canvas.x + 400, canvas.y + 400, { steps: 3 })
    const aliceId = await alice.page.evaluate(
      () => (window as unknown as { symphonyDemo: { doc: { clientID: number } } }).symphonyDemo.doc.clientID,
    )
    const cursor = bob.page.locator(`[data-cursor-client="${aliceId}"]`)
    await cursor.waitFor()
    assert.equal(await cursor.locator('.label').textContent(), 'Alice')
    assert.equal(await bob.page.locator('#people').textContent(), '2')
    await bob.page.screenshot({ path: join(ARTIFACTS, 'demo-whiteboard.png') })
    // Alice closes her tab: her cursor leaves Bob's page.
    await alice.page.context().close()
    await cursor.waitFor({ state: 'detached' })
    await bob.page.waitForFunction(() => document.getElementById('people')?.textContent === '1')
    assert.deepEqual([...alice.errors, ...bob.errors], [])
  })
})
