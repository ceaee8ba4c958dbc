import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import { uniqueRoom } from '@symphony/test-helpers/clients'
import { docFile } from '@symphony/test-helpers/doc-examples'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { build } from 'esbuild'
import type { Browser, Page } from 'playwright-core'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const CLIENT_LIB = fileURLToPath(new URL('..', import.meta.url))

/** The package README's quick start, exactly as a developer would paste it. */
function quickStartFromReadme(): string {
  return docFile(ROOT, 'client-quick-start/app.js').code
}

/** Bundles `source` the way an app's bundler would resolve `@symphony/client`. */
async function bundle(source: string): Promise<string> {
  const result = await build({
    stdin: { contents: source, resolveDir: CLIENT_LIB, loader: 'js' },
    bundle: true,
    format: 'esm',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0]?.text ?? ''
}

describe('the README quick start in Chromium', () => {
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

  it('runs as pasted: two pages share the list and see each other', async () => {
    const code = quickStartFromReadme()
    assert.match(code, /'ws:\/\/localhost:1234'/)
    const room = uniqueRoom('quick-start')
    const script = await bundle(
      code.replace("'ws://localhost:1234'", `'${t.wsUrl}'`).replace("'my-room'", `'${room}'`),
    )
    const html = `<!doctype html><p id="status"></p><p id="todos"></p><p id="people"></p><script type="module">${script}</script>`

    // The app on its own origin, as apps usually are (a page elsewhere could not reach loopback).
    const app = createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html' })
      response.end(html)
    })
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
    const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/`
    const errors: string[] = []
    async function open(): Promise<Page> {
      const page = await (await browser.newContext()).newPage()
      page.on('pageerror', (error) => errors.push(error.message))
      await page.goto(appUrl)
      return page
    }
    const pages = [await open(), await open()]
    for (const page of pages) {
      await page.waitForFunction(
        () => document.querySelector('#todos')?.textContent?.split(', ').length === 2,
      )
      assert.equal(await page.textContent('#todos'), 'Write the quick start, Write the quick start')
      await page.waitForFunction(() => document.querySelector('#people')?.textContent === 'Ada')
      assert.equal(await page.textContent('#status'), 'synced')
    }
    assert.deepEqual(errors, [])
    await Promise.all(pages.map((page) => page.context().close()))
    app.close()
  })
})
