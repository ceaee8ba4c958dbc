import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import * as Y from 'yjs'
import { ARTIFACTS, launchChromium } from './helpers/browser.js'
import { uniqueRoom } from './helpers/clients.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const DEMO = fileURLToPath(new URL('../dist/demo/', import.meta.url))
const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

interface Tab {
  page: Page
  context: BrowserContext
  errors: string[]
}

/** The demo whiteboard (built on @symphony/client) in real Chromium against a real server. */
describe('demo whiteboard in Chromium', () => {
  let t: TestServer
  let browser: Browser
  before(async () => {
    t = await startTestServer({ demoFolder: DEMO, apiSecret: API_SECRET })
    browser = await launchChromium()
  })
  after(async () => {
    await browser.close()
    await t.stop()
  })

  /** A fresh browser profile (own IndexedDB, own service worker), like another person's laptop. */
  async function openTab(server: TestServer, query: string, waitForStatus = 'synced'): Promise<Tab> {
    const context = await browser.newContext({ viewport: { width: 1000, height: 650 } })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${server.httpUrl}/?${query}`)
    await statusIs(page, waitForStatus)
    return { page, context, errors }
  }

  const statusIs = (page: Page, status: string) => page.waitForSelector(`#status[data-status="${status}"]`)

  async function canvasAt(page: Page, x: number, y: number): Promise<{ x: number; y: number }> {
    const box = await page.locator('#canvas').boundingBox()
    assert.ok(box)
    return { x: box.x + x, y: box.y + y }
  }

  async function drag(page: Page, from: [number, number], to: [number, number]): Promise<void> {
    const start = await canvasAt(page, ...from)
    const end = await canvasAt(page, ...to)
    await page.mouse.move(start.x, start.y)
    await page.mouse.down()
    await page.mouse.move(end.x, end.y, { steps: 8 })
    await page.mouse.up()
  }

  async function clickShape(page: Page, kind: 'rect' | 'ellipse', at: [number, number]): Promise<void> {
    await page.click(`[data-kind=${kind}]`)
    const point = await canvasAt(page, ...at)
    await page.mouse.click(point.x, point.y)
  }

  const shapeIds = (page: Page, kind: 'rect' | 'ellipse') =>
    page
      .locator(`${kind}[data-shape-id]`)
      .evaluateAll((els) => els.map((el) => el.getAttribute('data-shape-id')))

  /** Waits until `page` shows exactly these shapes (ids as another page shows them). */
  async function shows(page: Page, kind: 'rect' | 'ellipse', ids: (string | null)[]): Promise<void> {
    await page.waitForFunction(
      ({ kind, ids }) => {
        const shown = [...document.querySelectorAll(`${kind}[data-shape-id]`)].map((el) =>
          el.getAttribute('data-shape-id'),
        )
        return JSON.stringify(shown.sort()) === JSON.stringify([...ids].sort())
      },
      { kind, ids },
    )
  }

  it('two pages converge, show each other’s cursors, and a closed page’s cursor leaves', async () => {
    const room = uniqueRoom('demo')
    const alice = await openTab(t, `room=${room}&name=Alice`)
    const bob = await openTab(t, `room=${room}&name=Bob`)
    assert.equal(await alice.page.locator('#status').textContent(), 'online')
    assert.equal(await alice.page.locator('#room-input').inputValue(), room)
    await drag(alice.page, [100, 100], [260, 220])
    // Bob watches the rectangle being drawn; it ends where Alice let go.
    await bob.page.waitForFunction(() => {
      const el = document.querySelector('rect[data-shape-id]')
      return ['x', 'y', 'width', 'height'].map((k) => el?.getAttribute(k)).join(',') === '100,100,160,120'
    })
    await clickShape(bob.page, 'ellipse', [500, 300])
    await shows(alice.page, 'ellipse', await shapeIds(bob.page, 'ellipse'))
    // Alice's cursor shows on Bob's page with her name.
    const pointer = await canvasAt(alice.page, 400, 400)
    await alice.page.mouse.move(pointer.x, pointer.y, { steps: 3 })
    const aliceId = await alice.page.evaluate(
      () =>
        (window as unknown as { symphonyDemo: { room: { doc: { clientID: number } } } }).symphonyDemo.room.doc
          .clientID,
    )
    const cursor = bob.page.locator(`[data-cursor-client="${aliceId}"]`)
    await cursor.waitFor()
    assert.equal(await cursor.locator('.label').textContent(), 'Alice')
    assert.equal(await bob.page.locator('#people').textContent(), '2')
    await bob.page.screenshot({ path: join(ARTIFACTS, 'demo-whiteboard.png') })
    // Alice closes her page: her cursor leaves Bob's.
    await alice.context.close()
    await cursor.waitFor({ state: 'detached' })
    await bob.page.waitForFunction(() => document.getElementById('people')?.textContent === '1')
    assert.deepEqual([...alice.errors, ...bob.errors], [])
    await bob.context.close()
  })

  it('undo on one page reverts only that person’s shapes', async () => {
    const room = uniqueRoom('undo')
    const alice = await openTab(t, `room=${room}&name=Alice`)
    const bob = await openTab(t, `room=${room}&name=Bob`)
    assert.equal(await alice.page.locator('#undo').isDisabled(), true)
    await drag(alice.page, [80, 80], [200, 180])
    const aliceRect = await shapeIds(alice.page, 'rect')
    await clickShape(bob.page, 'ellipse', [500, 300])
    const bobEllipse = await shapeIds(bob.page, 'ellipse')
    await shows(alice.page, 'ellipse', bobEllipse)
    await shows(bob.page, 'rect', aliceRect)
    // One drag is one undo step, however many updates it sent.
    await alice.page.keyboard.press('Control+z')
    await shows(alice.page, 'rect', [])
    await shows(bob.page, 'rect', [])
    assert.deepEqual(await shapeIds(alice.page, 'ellipse'), bobEllipse, 'Bob’s ellipse stays on Alice’s page')
    assert.deepEqual(await shapeIds(bob.page, 'ellipse'), bobEllipse, 'and on Bob’s')
    assert.equal(await alice.page.locator('#undo').isDisabled(), true, 'nothing of Alice’s is left to undo')
    await alice.page.click('#redo')
    await shows(bob.page, 'rect', aliceRect)
    assert.deepEqual([...alice.errors, ...bob.errors], [])
    await Promise.all([alice.context.close(), bob.context.close()])
  })

  it('a page that goes offline keeps its edits through a reload and syncs them when back', async () => {
    const room = uniqueRoom('offline')
    const alice = await openTab(t, `room=${room}&name=Alice`)
    const bob = await openTab(t, `room=${room}&name=Bob`)
    // The service worker must hold the page before the network goes, or nothing could reload.
    await alice.page.waitForFunction(() => navigator.serviceWorker.controller !== null)

    await alice.context.setOffline(true)
    await statusIs(alice.page, 'offline')
    assert.equal(await alice.page.locator('#status').textContent(), 'offline')
    await clickShape(alice.page, 'rect', [150, 150])
    await clickShape(alice.page, 'rect', [300, 150])
    const aliceRects = await shapeIds(alice.page, 'rect')
    assert.equal(aliceRects.length, 2)
    await clickShape(bob.page, 'ellipse', [500, 400]) // meanwhile, online
    const bobEllipse = await shapeIds(bob.page, 'ellipse')
    await waitUntilStored(alice.page, room, aliceRects)

    await alice.page.reload()
    await statusIs(alice.page, 'offline')
    await shows(alice.page, 'rect', aliceRects)
    assert.deepEqual(await shapeIds(alice.page, 'ellipse'), [], 'Bob’s ellipse cannot have arrived')
    assert.deepEqual(await shapeIds(bob.page, 'rect'), [], 'nor Alice’s rectangles left her page')

    await alice.context.setOffline(false)
    await statusIs(alice.page, 'synced')
    await shows(bob.page, 'rect', aliceRects)
    await shows(alice.page, 'ellipse', bobEllipse)
    await shows(alice.page, 'rect', aliceRects)
    assert.deepEqual([...alice.errors, ...bob.errors], [])
    await Promise.all([alice.context.close(), bob.context.close()])
  })

  /** Waits until IndexedDB holds each shape id: a reload before the write commits could lose it. */
  async function waitUntilStored(page: Page, room: string, ids: (string | null)[]): Promise<void> {
    const database = `symphony:${t.wsUrl}/${room}`
    await page.waitForFunction(
      async ({ database, ids }) => {
        const db = await new Promise<IDBDatabase>((resolve, reject) => {
          const request = indexedDB.open(database)
          request.onsuccess = () => resolve(request.result)
          request.onerror = () => reject(request.error)
        })
        const updates = await new Promise<Uint8Array[]>((resolve, reject) => {
          const request = db.transaction('updates').objectStore('updates').getAll()
          request.onsuccess = () => resolve(request.result)
          request.onerror = () => reject(request.error)
        })
        db.close()
        // Map keys travel as UTF-8 inside the Yjs updates.
        const text = updates.map((u) => new TextDecoder().decode(u)).join('')
        return ids.every((id) => id !== null && text.includes(id))
      },
      { database, ids },
    )
  }

  it('a shape posted through the REST API appears live, and deleting the room says so on the page', async () => {
    const room = uniqueRoom('api')
    const tab = await openTab(t, `room=${room}`)
    const backend = new Y.Doc()
    const shape = new Y.Map<string | number>()
    for (const [key, value] of Object.entries({
      kind: 'rect',
      x: 40,
      y: 40,
      w: 120,
      h: 80,
      color: '#ef4444',
    })) {
      shape.set(key, value)
    }
    backend.getMap('shapes').set('from-api', shape)
    const rest = `${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}`
    const posted = await fetch(`${rest}/update`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_SECRET}`, 'content-type': 'application/octet-stream' },
      body: new Blob([Y.encodeStateAsUpdate(backend) as Uint8Array<ArrayBuffer>]),
    })
    assert.equal(posted.status, 204)
    await tab.page.waitForSelector('rect[data-shape-id="from-api"]')
    const deleted = await fetch(rest, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${API_SECRET}` },
    })
    assert.equal(deleted.status, 204)
    const notice = tab.page.locator('#notice[data-code="ROOM_DELETED"]')
    await notice.waitFor()
    assert.equal(await notice.textContent(), 'the room was deleted')
    await tab.context.close()
  })

  it('an expired token shows a clear error once and does not retry', async () => {
    const secure = await startTestServer({ demoFolder: DEMO, auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('expired')
    const expired = await signToken({ room, access: 'rw', exp: Math.floor(Date.now() / 1000) - 60 })
    const context = await browser.newContext()
    const page = await context.newPage()
    let sockets = 0
    page.on('websocket', () => sockets++)
    await page.goto(`${secure.httpUrl}/?room=${room}&token=${expired}`)
    const notice = page.locator('#notice[data-code="AUTH_REFUSED"]')
    await notice.waitFor()
    assert.equal(await notice.textContent(), 'the server refused the token: the token has expired')
    assert.equal(await page.locator('#status').getAttribute('data-status'), 'failed')
    // A client that kept retrying (first backoff < 0.5 s, the next < 1 s) would knock again here.
    await page.waitForTimeout(2_000)
    assert.equal(sockets, 1, 'one WebSocket attempt')
    const refused = (await secure.server.metrics.connectionsRefused.get()).values
    assert.deepEqual(
      refused.map((v) => [v.labels.reason, v.value]),
      [['TOKEN_INVALID', 1]],
    )
    await context.close()
    await secure.stop()
  })
})
