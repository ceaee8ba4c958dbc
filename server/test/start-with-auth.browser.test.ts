import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freePort } from '@symphony/dev-scripts/services'
import { decodeJwt } from 'jose'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import * as Y from 'yjs'
import { launchChromium } from './helpers/browser.js'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { TEST_SECRET } from './helpers/tokens.js'
import { savedVersionHolding, versionsApi } from './helpers/versions.js'
import { addShape, boardDocument, boardOf, openWhiteboard, waitForBoard } from './helpers/whiteboard.js'

const START = fileURLToPath(new URL('../../scripts/start.mjs', import.meta.url))
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`

/** A local webhook receiver that verifies each delivery with the `standardwebhooks` package. */
async function startReceiver() {
  const verifier = new Webhook(WEBHOOK_SECRET)
  const received: { type: string; room: unknown }[] = []
  const invalid: string[] = []
  const server = createServer(async (request, response) => {
    let body = ''
    for await (const chunk of request) body += chunk
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))
    try {
      const payload = verifier.verify(body, headers) as { type: string; data: { room: unknown } }
      received.push({ type: payload.type, room: payload.data.room })
    } catch (error) {
      invalid.push((error as Error).message)
    }
    response.writeHead(204).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return { url, received, invalid, close: () => server.close() }
}

/**
 * `AUTH_SECRET=… npm start`, on free ports and a data folder of its own, `env` added; resolves
 * with its port and the REST API secret it printed.
 */
function startWithAuth(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number; apiSecret: string }> {
  const data = mkdtempSync(join(tmpdir(), 'symphony-start-'))
  return new Promise((resolve, reject) => {
    void freePort().then((port: number) => {
      const child = spawn(process.execPath, [START], {
        env: {
          PATH: process.env.PATH ?? '',
          AUTH_SECRET: TEST_SECRET,
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: 'none',
          SNAPSHOTS: `file://${join(data, 'snapshots')}`,
          JOURNAL: `file://${join(data, 'journal')}`,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        const apiSecret = /Authorization: Bearer (\S+)\)/.exec(output)?.[1]
        if (output.includes('Ctrl-C stops everything') && apiSecret) resolve({ child, port, apiSecret })
      })
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)))
    })
  })
}

describe('AUTH_SECRET=… npm start: the demos work with auth on, through the development token route', () => {
  let started: { child: ChildProcess; port: number; apiSecret: string }
  let browser: Browser
  let hooks: Awaited<ReturnType<typeof startReceiver>>
  before(async () => {
    const launched = launchChromium() // while the server starts
    hooks = await startReceiver()
    started = await startWithAuth({
      WEBHOOK_URL: hooks.url,
      WEBHOOK_SECRET,
      WEBHOOK_DEBOUNCE_MS: '100',
      SNAPSHOT_INTERVAL_MS: '300', // versions to restore come quickly
    })
    browser = await launched
  })
  after(async () => {
    await browser?.close()
    started?.child.kill('SIGTERM')
    hooks?.close()
  })

  const base = () => `http://127.0.0.1:${started.port}`

  /** A whiteboard tab in `room`, synced. */
  const openBoard = (room: string): Promise<Page> => openWhiteboard(browser, base(), room)

  /** Adds the ellipse `posted` to the room's board through the REST API; resolves with the status. */
  const postEllipse = async (rest: string, authorization: string): Promise<number> => {
    const backend = new Y.Doc()
    const shape = new Y.Map<string | number>()
    for (const [key, value] of Object.entries({
      kind: 'ellipse',
      x: 60,
      y: 60,
      w: 90,
      h: 60,
      color: '#3b82f6',
    }))
      shape.set(key, value)
    backend.getMap('shapes').set('posted', shape)
    const posted = await fetch(`${rest}/update`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/octet-stream' },
      body: new Blob([Y.encodeStateAsUpdate(backend) as Uint8Array<ArrayBuffer>]),
    })
    return posted.status
  }

  it('mints a short-lived edit token for the one room asked for, and refuses a bad room name', async () => {
    const room = uniqueRoom('dev')
    const response = await fetch(`${base()}/dev/token?room=${encodeURIComponent(room)}&name=Ada`)
    assert.equal(response.status, 200)
    const claims = decodeJwt(((await response.json()) as { token: string }).token)
    assert.equal(claims.room, room)
    assert.equal(claims.access, 'rw')
    assert.equal(claims.name, 'Ada')
    assert.ok(claims.exp !== undefined && claims.exp - Date.now() / 1000 <= 15 * 60 + 1)
    const refused = await fetch(`${base()}/dev/token?room=`)
    assert.equal(refused.status, 400)
    const withoutToken = await fetch(`${base()}/rooms/${room}/access`)
    assert.equal(withoutToken.status, 401, 'auth is on')
  })

  it('serves the whiteboard: two pages get tokens, sync, and each sees the other', async () => {
    const room = uniqueRoom('whiteboard')
    const [a, b] = [await openBoard(room), await openBoard(room)]
    const id = await addShape(a, 'rect', [200, 150])
    await b.waitForSelector(`rect[data-shape-id="${id}"]`)
    await Promise.all([a.context().close(), b.context().close()])
  })

  it('serves the React example at /react: two pages share the to-do list and see each other', async () => {
    const room = uniqueRoom('react')
    const open = async (name: string): Promise<Page> => {
      const page = await (await browser.newContext()).newPage()
      await page.goto(`${base()}/react?room=${encodeURIComponent(room)}&name=${name}`)
      await page.waitForSelector('#status[data-status="synced"]')
      return page
    }
    const [ada, bob] = [await open('Ada'), await open('Bob')]
    await ada.waitForFunction(() => document.querySelector('#people')?.textContent === 'Also here: Bob')
    await ada.fill('input[name=todo]', 'buy milk')
    await ada.press('input[name=todo]', 'Enter')
    await bob.waitForFunction(() => document.querySelector('#todos')?.textContent === 'buy milk')
    await bob.fill('input[name=todo]', 'walk the dog')
    await bob.click('button[type=submit]')
    await ada.waitForFunction(() => document.querySelector('#todos')?.textContent === 'buy milkwalk the dog')
    await ada.click('text=Undo')
    await bob.waitForFunction(() => document.querySelector('#todos')?.textContent === 'walk the dog')
    await Promise.all([ada.context().close(), bob.context().close()])
  })

  it('the REST API it prints and webhooks: read, write live into an open tab, delete (the tab says so)', async () => {
    const room = uniqueRoom('walkthrough')
    const rest = `${base()}/api/v1/rooms/${encodeURIComponent(room)}`
    const authorization = `Bearer ${started.apiSecret}`
    const page = await openBoard(room)
    assert.deepEqual(await (await fetch(`${rest}/document`, { headers: { authorization } })).json(), {})
    assert.equal(await postEllipse(rest, authorization), 204)
    await page.waitForSelector('ellipse[data-shape-id="posted"]')
    assert.equal((await fetch(rest, { method: 'DELETE', headers: { authorization } })).status, 204)
    await page.waitForSelector('#notice[data-code="ROOM_DELETED"]')
    const ofRoom = (type: string) => hooks.received.filter((e) => e.type === type && e.room === room)
    await eventually(
      () => ['user.joined', 'document.updated', 'room.deleted'].every((type) => ofRoom(type).length === 1),
      'the receiver hears the join, the change and the deletion',
    )
    assert.deepEqual(hooks.invalid, [], 'every delivery verified with standardwebhooks')
    await page.context().close()
  })

  it('restores a saved version through the REST API: two whiteboard tabs see the board as it was', async () => {
    const room = uniqueRoom('restore')
    const rest = `${base()}/api/v1/rooms/${encodeURIComponent(room)}`
    const authorization = `Bearer ${started.apiSecret}`
    const [a, b] = [await openBoard(room), await openBoard(room)]
    const id = await addShape(a, 'rect', [200, 150])
    await b.waitForSelector(`rect[data-shape-id="${id}"]`)
    // The version holding just the rectangle, once saved.
    const api = { httpUrl: base(), apiSecret: started.apiSecret }
    const saved = await boardOf(a)
    const savedDocument = await boardDocument(a)
    const first = await savedVersionHolding(api, room, savedDocument, {
      message: 'a version holds the rectangle',
      timeoutMs: 10_000,
    })
    // Then a second shape, from the backend.
    assert.equal(await postEllipse(rest, authorization), 204)
    await Promise.all([a, b].map((page) => page.waitForSelector('ellipse[data-shape-id="posted"]')))

    const restored = await versionsApi(api, room, `/${first}/restore`, 'POST')
    assert.equal(restored.status, 200)
    await Promise.all([waitForBoard(a, saved), waitForBoard(b, saved)])
    await eventually(
      () => hooks.received.some((e) => e.type === 'document.restored' && e.room === room),
      'the receiver hears of the restore',
    )
    await Promise.all([a.context().close(), b.context().close()])
  })
})
