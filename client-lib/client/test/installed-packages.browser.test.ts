import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, normalize } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import { uniqueRoom } from '@symphony/test-helpers/clients'
import { docFile } from '@symphony/test-helpers/doc-examples'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import type { Browser, Page } from 'playwright-core'
import { bundleIn, scratchApp, serveApp, startBackend, swap, TSC } from './helpers/scratch-app.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** A file of the documentation's examples (`docs/development.md`), as a developer copies it. */
function quickStart(marker: string): string {
  return docFile(ROOT, marker).code
}

/** The app: the tarballs, and what the README's examples and this test's builds use. */
function installedApp(): string {
  return scratchApp([
    'yjs@^13.6.33',
    'react@^19',
    'react-dom@^19',
    '@types/react@^19',
    '@types/node@^20',
    'express@^5',
    'vite@^7',
  ])
}

/** Serves a built app folder (Vite's `dist/`); `/api/…` goes to the app's backend at `backend`. */
async function serveFolder(folder: string, backend: string): Promise<{ url: string; server: Server }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' }
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    if (path.startsWith('/api/')) {
      const answer = await fetch(`${backend}${request.url}`)
      response.writeHead(answer.status, { 'Content-Type': 'application/json' })
      response.end(await answer.text())
      return
    }
    const file = join(folder, path === '/' ? 'index.html' : normalize(path).replace(/^(\.\.[/\\])+/, ''))
    try {
      const body = readFileSync(file)
      response.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
      response.end(body)
    } catch {
      response.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }
}

describe('the packed packages, installed into an app outside the repository', () => {
  let app: string
  let open: TestServer
  let secured: TestServer
  let backend: { child: ChildProcess; url: string }
  let browser: Browser
  const pages: Server[] = []
  before(async () => {
    app = installedApp()
    open = await startTestServer()
    secured = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    backend = await startBackend(app)
    browser = await launchChromium()
  })
  after(async () => {
    for (const page of pages) page.close()
    backend?.child.kill()
    await browser?.close()
    await open?.stop()
    await secured?.stop()
    if (app) rmSync(app, { recursive: true, force: true })
  })

  const errors: string[] = []
  async function tab(url: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage()
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(url)
    return page
  }

  it('ships types for every entry point of the three, resolved through their exports maps', () => {
    writeFileSync(
      join(app, 'check.tsx'),
      [
        "import { createClient, type Room } from '@symphony/client'",
        "import { CloseCode, isValidRoomName, MESSAGE_SYNC_STATUS } from '@symphony/client/wire'",
        "import { createToken } from '@symphony/node'",
        "import { MAX_INFO_BYTES } from '@symphony/node/token-claims'",
        "import { RoomProvider, SymphonyProvider, useList, useSyncStatus } from '@symphony/react'",
        "const room: Room = createClient({ url: 'ws://localhost:1234' }).enter('r')",
        'const unsynced: boolean = room.hasUnsyncedChanges()',
        "const token: Promise<string> = createToken({ room: 'r', access: 'rw', userId: 'u', expiresIn: 60, secret: 's' })",
        "function List() { const items: readonly string[] = useList<string>('l'); const s: 'synchronizing' | 'synchronized' = useSyncStatus(); return <p>{items.length}{s}</p> }",
        "export const tree = <SymphonyProvider client={createClient({ url: 'ws://x' })}><RoomProvider id='r'><List /></RoomProvider></SymphonyProvider>",
        'export const used = [unsynced, token, CloseCode.GoingAway, isValidRoomName, MESSAGE_SYNC_STATUS, MAX_INFO_BYTES]',
      ].join('\n'),
    )
    const options = [
      '--noEmit',
      '--strict',
      '--module',
      'esnext',
      '--moduleResolution',
      'bundler',
      '--jsx',
      'react-jsx',
    ]
    execFileSync('node', [TSC, ...options, '--target', 'es2022', '--lib', 'es2022,dom', 'check.tsx'], {
      cwd: app,
      stdio: 'pipe',
    })
  })

  it('imports in Node without touching browser globals', () => {
    const script =
      "const [c, r, n] = await Promise.all(['@symphony/client', '@symphony/react', '@symphony/node'].map((p) => import(p))); console.log(typeof c.createClient, typeof r.RoomProvider, typeof n.createToken)"
    const output = execFileSync('node', ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' })
    assert.equal(output.trim(), 'function function function')
  })

  it("runs the client README's quick start, bundled with esbuild, in two Chromium pages", async () => {
    const room = uniqueRoom('installed')
    let source = swap(quickStart('client-quick-start/app.js'), "'ws://localhost:1234'", `'${open.wsUrl}'`)
    source = swap(source, "'my-room'", `'${room}'`)
    const { code, inputs } = await bundleIn(app, source, 'js')
    assert.ok(
      inputs.some((input) => input.includes('node_modules/@symphony/client/dist/')),
      'from the tarball',
    )
    const page = await serveApp(code)
    pages.push(page.server)
    const tabs = [await tab(page.url), await tab(page.url)]
    for (const t of tabs) {
      await t.waitForFunction(() => document.querySelector('#todos')?.textContent?.split(', ').length === 2)
      await t.waitForFunction(() => document.querySelector('#status')?.textContent === 'synced')
    }
    assert.deepEqual(errors, [])
  })

  /** The React README's quick start for `room`, with a `getToken` that asks the app's backend. */
  function reactQuickStart(room: string): string {
    const getToken = `getToken: async () => (await (await fetch('/api/symphony-token?room=' + encodeURIComponent('${room}'))).json()).token`
    const source = swap(
      quickStart('react-quick-start/app.tsx'),
      "{ url: 'ws://localhost:1234' }",
      `{ url: '${secured.wsUrl}', ${getToken} }`,
    )
    return swap(source, 'id="my-todos"', `id="${room}"`)
  }

  /** Two people on the page at `url`: both synced, each sees the other, an item added by one reaches the other. */
  async function assertTodoListWorks(url: string): Promise<void> {
    const [ada, bob] = [await tab(url), await tab(url)]
    for (const t of [ada, bob])
      await t.waitForFunction(() => document.querySelector('main #status')?.textContent === 'synced')
    await ada.waitForFunction(() =>
      /^Guest \d+$/.test(document.querySelector('main #people')?.textContent ?? ''),
    )
    await ada.fill('input[name=todo]', 'ship it')
    await ada.click('button[type=submit]')
    await bob.waitForFunction(() => document.querySelector('main #todos')?.textContent === 'ship it')
    assert.deepEqual(errors, [])
    await Promise.all([ada.context().close(), bob.context().close()])
  }

  it("runs the React README's to-do list with auth on, its tokens from the node README's express route", async () => {
    const room = `team-7/${uniqueRoom('react')}` // the route's rule: rooms under team-7/
    const { code, inputs } = await bundleIn(app, reactQuickStart(room), 'tsx')
    assert.ok(
      inputs.some((input) => input.includes('node_modules/@symphony/react/dist/')),
      'from the tarball',
    )
    const page = await serveApp(code, { backend: backend.url })
    pages.push(page.server)
    await assertTodoListWorks(page.url)
    const refused = await fetch(`${backend.url}/api/symphony-token?room=other`)
    assert.equal(refused.status, 403, "the route's own rule")
  })

  it("stops with AUTH_DENIED when the node README's route refuses a room (403), through the client README's getToken", async () => {
    const block = quickStart('auth-denied/app.js')
    const forRoom = (room: string) =>
      `${swap(block, "'ws://localhost:1234'", `'${secured.wsUrl}'`).replaceAll('my-room', room)}\nwindow.room = room`
    type Seen = { status: string; sync: string; error?: string }
    const seen = (page: Page) =>
      page.evaluate(() => {
        const { room } = window as unknown as {
          room: { status: string; syncStatus: string; error: { code: string } | null }
        }
        return { status: room.status, sync: room.syncStatus, error: room.error?.code } as Seen
      })
    const refusedRoom = uniqueRoom('not-team-7') // the route answers 403 outside team-7/
    const allowedRoom = `team-7/${uniqueRoom('allowed')}`
    const pagesByRoom = await Promise.all(
      [refusedRoom, allowedRoom].map(async (room) => {
        const page = await serveApp((await bundleIn(app, forRoom(room), 'js')).code, { backend: backend.url })
        pages.push(page.server)
        return tab(page.url)
      }),
    )
    const [refused, allowed] = pagesByRoom as [Page, Page]
    await refused.waitForFunction(
      () => document.querySelector('#status')?.textContent === 'Sign in again to keep editing',
    )
    assert.deepEqual(await seen(refused), { status: 'failed', sync: 'synchronizing', error: 'AUTH_DENIED' })
    await allowed.waitForFunction(
      () => (window as unknown as { room?: { status: string } }).room?.status === 'synced',
    )
    assert.deepEqual(await seen(allowed), { status: 'synced', sync: 'synchronized', error: undefined })
    assert.deepEqual(errors, [])
    await Promise.all([refused.context().close(), allowed.context().close()])
  })

  it('builds the same app with Vite, and it runs', async () => {
    const site = join(app, 'vite-app')
    mkdirSync(site)
    writeFileSync(join(site, 'main.tsx'), reactQuickStart(`team-7/${uniqueRoom('vite')}`))
    writeFileSync(
      join(site, 'index.html'),
      '<!doctype html><div id="root"></div><script type="module" src="./main.tsx"></script>',
    )
    const script = `import { build } from 'vite'
await build({ root: ${JSON.stringify(site)}, logLevel: 'silent', esbuild: { jsx: 'automatic' } })`
    execFileSync('node', ['--input-type=module', '-e', script], { cwd: app, stdio: 'pipe' })
    const page = await serveFolder(join(site, 'dist'), backend.url)
    pages.push(page.server)
    await assertTodoListWorks(page.url)
  })
})
