import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { decodeJwt } from 'jose'
import type { Browser, Page } from 'playwright-core'
import { freePort } from '../../scripts/lib/services.mjs'
import { launchChromium } from './helpers/browser.js'
import { uniqueRoom } from './helpers/clients.js'
import { TEST_SECRET } from './helpers/tokens.js'

const START = fileURLToPath(new URL('../../scripts/start.mjs', import.meta.url))

/** `AUTH_SECRET=… npm start`, on free ports and a data folder of its own; resolves with its port. */
function startWithAuth(): Promise<{ child: ChildProcess; port: number }> {
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
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes('Ctrl-C stops everything')) resolve({ child, port })
      })
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)))
    })
  })
}

describe('AUTH_SECRET=… npm start: the demos work with auth on, through the development token route', () => {
  let started: { child: ChildProcess; port: number }
  let browser: Browser
  before(async () => {
    started = await startWithAuth()
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    started?.child.kill('SIGTERM')
  })

  const base = () => `http://127.0.0.1:${started.port}`

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
    const open = async (): Promise<Page> => {
      const page = await (await browser.newContext()).newPage()
      await page.goto(`${base()}/?room=${room}`)
      await page.waitForSelector('#status[data-status="synced"]')
      return page
    }
    const [a, b] = [await open(), await open()]
    await a.click('[data-kind=rect]')
    const box = await a.locator('#canvas').boundingBox()
    assert.ok(box)
    await a.mouse.click(box.x + 200, box.y + 150)
    const id = await a.locator('rect[data-shape-id]').first().getAttribute('data-shape-id')
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
})
