// Runs the documentation's examples (doc-examples.ts finds them, type-check-doc-examples.ts writes
// them into the app) against a sync server of each example's own. docs/development.md ("Code
// blocks that run") says what each role does.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { dirname, join } from 'node:path'
import { freePort } from '@symphony/dev-scripts/services'
import { eventually } from '@symphony/test-helpers/clients'
import type { DocExample, DocFile } from '@symphony/test-helpers/doc-examples'
import { startTestServer, type TestServer } from '@symphony/test-helpers/test-server'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import { build, type Plugin } from 'esbuild'
import type { Browser, Page } from 'playwright-core'
import * as Y from 'yjs'
import { type Delivery, type ExampleOrigin, startOrigin } from './example-origin.js'
import { fileIn } from './type-check-doc-examples.js'

/** The secrets an example's processes get in their environment, as a deployment would set them. */
export const EXAMPLE_SECRETS = {
  AUTH_SECRET: TEST_SECRET,
  API_SECRET: `api-${randomBytes(24).toString('hex')}`,
  WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
}

/** Placeholders a block may use for the sync server, replaced by the running server's address. */
function withServer(code: string, server: TestServer): string {
  return code
    .replaceAll('wss://sync.example.com', server.wsUrl)
    .replaceAll('ws://localhost:1234', server.wsUrl)
    .replaceAll('<WebSocketUrl>', server.wsUrl)
    .replaceAll('https://sync.example.com', server.httpUrl)
    .replaceAll('http://localhost:1234', server.httpUrl)
}

/** The environment an example's Node processes get: PATH, the secrets and, for a backend, PORT. */
function processEnv(port?: number): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '', ...EXAMPLE_SECRETS, ...(port ? { PORT: String(port) } : {}) }
}

/** Keeps the last few KiB a process wrote, for the failure message. */
function recordOutput(child: ChildProcess): () => string {
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return () => output.trim()
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/** Starts a backend file with PORT set; resolves once it accepts connections there. */
async function startBackend(path: string, file: DocFile) {
  const port = await freePort()
  const child = spawn(process.execPath, [path], { cwd: dirname(path), env: processEnv(port), stdio: 'pipe' })
  const output = recordOutput(child)
  const deadline = Date.now() + 30_000
  while (!(await accepts(port))) {
    assert.ok(
      child.exitCode === null,
      `${file.sources.join(', ')}: the backend exited (${child.exitCode}):\n${output()}`,
    )
    assert.ok(
      Date.now() < deadline,
      `${file.sources.join(', ')}: the backend did not listen on PORT:\n${output()}`,
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { url: `http://127.0.0.1:${port}`, child }
}

/** Runs a node file to its end: it must exit with 0 within a minute. */
async function runNodeFile(path: string, file: DocFile): Promise<void> {
  const child = spawn(process.execPath, [path], { cwd: dirname(path), env: processEnv(), stdio: 'pipe' })
  const output = recordOutput(child)
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (status) => resolve(status)))
  clearTimeout(timer)
  assert.equal(code, 0, `${file.sources.join(', ')}: exited with ${code}:\n${output()}`)
}

/**
 * `@symphony/client` as the page imports it, `createClient` wrapped to record every room its
 * clients enter (`window.__docExample`): the check needs no hook in the example's code.
 */
const OBSERVER = `import * as symphony from '@symphony/client'
export * from '@symphony/client'
const seen = (window.__docExample = { rooms: [], errors: [] })
export function createClient(options) {
  const client = symphony.createClient(options)
  const enter = client.enter.bind(client)
  client.enter = (id) => {
    const room = enter(id)
    if (!seen.rooms.some((r) => r.room === room)) {
      seen.rooms.push({ id, room })
      room.on('error', (error) => seen.errors.push(id + ': ' + error.code + ' ' + error.message))
    }
    return room
  }
  return client
}
`

function observeClient(app: string): Plugin {
  const observer = join(app, 'harness', 'observed-client.js')
  writeFileSync(observer, OBSERVER)
  return {
    name: 'observe-symphony-client',
    setup(build) {
      build.onResolve({ filter: /^@symphony\/client$/ }, (args) =>
        args.importer === observer ? undefined : { path: observer },
      )
    },
  }
}

/** The page a browser file runs on: a #root, and an element for each id the code looks up. */
function pageFor(code: string): string {
  const ids = new Set(['root'])
  for (const match of code.matchAll(
    /querySelector(?:All)?\(\s*['"`]#([\w-]+)|getElementById\(\s*['"`]([\w-]+)/g,
  )) {
    ids.add(match[1] ?? match[2] ?? '')
  }
  const elements = [...ids].map((id) => `<div id="${id}"></div>`).join('')
  return `<!doctype html><meta charset="utf-8">${elements}<script type="module" src="/example.js"></script>`
}

interface Observed {
  rooms: { id: string; status: string; doc: string }[]
  errors: string[]
}

function observe(page: Page): Promise<Observed> {
  return page.evaluate(() => {
    type Seen = {
      rooms: { id: string; room: { status: string; doc: { toJSON(): unknown } } }[]
      errors: string[]
    }
    const seen = (window as unknown as { __docExample?: Seen }).__docExample
    return {
      rooms: (seen?.rooms ?? []).map(({ id, room }) => ({
        id,
        status: room.status,
        doc: JSON.stringify(room.doc.toJSON()),
      })),
      errors: seen?.errors ?? [],
    }
  })
}

/**
 * Opens a browser file in two pages (two browser profiles): each must enter a room that gets
 * synced with no error, nothing may throw, and the two must end up with the same documents.
 */
async function runInBrowser(
  browser: Browser,
  app: string,
  path: string,
  file: DocFile,
  origin: ExampleOrigin,
) {
  const bundled = await build({
    entryPoints: [path],
    absWorkingDir: app,
    bundle: true,
    format: 'esm',
    jsx: 'automatic',
    loader: { '.css': 'empty' },
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [observeClient(app)],
    write: false,
    logLevel: 'silent',
  })
  origin.state.script = bundled.outputFiles[0]?.text ?? ''
  origin.state.html = pageFor(file.code)
  const where = file.sources.join(', ')
  const pages: Page[] = []
  const thrown: string[] = []
  // An exception ends the wait for rooms at once: a page that threw may never enter one.
  let threw = () => {}
  const throws = new Promise<false>((resolve) => {
    threw = () => resolve(false)
  })
  try {
    for (let i = 0; i < 2; i++) {
      const page = await (await browser.newContext()).newPage()
      page.on('pageerror', (error) => {
        thrown.push(error.message)
        threw()
      })
      await page.goto(origin.url)
      pages.push(page)
    }
    for (const page of pages) {
      const synced = page
        .waitForFunction(
          () => {
            const seen = (
              window as unknown as {
                __docExample?: { rooms: { room: { status: string } }[]; errors: string[] }
              }
            ).__docExample
            if (!seen) return false
            return (
              seen.errors.length > 0 ||
              (seen.rooms.length > 0 && seen.rooms.every(({ room }) => room.status === 'synced'))
            )
          },
          undefined,
          { timeout: 20_000 },
        )
        .then(
          () => true,
          () => false,
        )
      const settled = await Promise.race([synced, throws])
      const observed = await observe(page)
      assert.deepEqual(thrown, [], `${where}: the page threw`)
      assert.deepEqual(observed.errors, [], `${where}: a room reported an error`)
      assert.ok(
        settled,
        `${where}: every room it enters gets synced (it entered ${JSON.stringify(observed.rooms.map(({ id, status }) => ({ id, status })))})`,
      )
    }
    await eventually(async () => {
      const [a, b] = await Promise.all(
        pages.map(async (page) => (await observe(page)).rooms.map(({ id, doc }) => [id, doc])),
      )
      return JSON.stringify(a) === JSON.stringify(b)
    }, `${where}: the two pages end up with the same documents`)
    assert.deepEqual(thrown, [], `${where}: the page threw`)
  } finally {
    await Promise.all(pages.map((page) => page.context().close()))
  }
}

/**
 * The server's webhooks reach the backend at its `webhook=` path and are answered 2xx; the same
 * delivery with a forged signature is refused: the receiver verifies.
 */
async function checkWebhooks(server: TestServer, backendUrl: string, file: DocFile, origin: ExampleOrigin) {
  const where = file.sources.join(', ')
  const doc = new Y.Doc()
  doc.getMap('docs').set('checked', true)
  const room = `docs-example-${randomBytes(4).toString('hex')}`
  const posted = await fetch(`${server.httpUrl}/api/v1/rooms/${room}/update`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${EXAMPLE_SECRETS.API_SECRET}`,
      'Content-Type': 'application/octet-stream',
    },
    body: new Blob([Y.encodeStateAsUpdate(doc) as Uint8Array<ArrayBuffer>]),
  })
  assert.ok(posted.ok, `an edit through the REST API (${posted.status})`)
  const delivered = () =>
    origin.state.deliveries.find((d) => d.path === file.webhook && d.body.includes(room))
  await eventually(
    () => delivered() !== undefined,
    `${where}: the server's webhook reaches ${file.webhook}`,
    15_000,
  )
  const delivery = delivered() as Delivery
  assert.ok(
    delivery.status >= 200 && delivery.status < 300,
    `${where}: the receiver answered ${delivery.status} to a real webhook`,
  )
  const headers = Object.fromEntries(
    Object.entries(delivery.headers)
      .filter(([name]) => name !== 'host' && name !== 'content-length')
      .map(([name, value]) => [name, String(value)]),
  )
  headers['webhook-signature'] = `v1,${randomBytes(32).toString('base64')}`
  const refused = await fetch(`${backendUrl}${file.webhook}`, {
    method: 'POST',
    headers,
    body: new Blob([new Uint8Array(delivery.body)]),
  })
  assert.ok(refused.status >= 400, `${where}: the receiver answered ${refused.status} to a forged signature`)
}

/**
 * Runs one example: a sync server of its own (auth on, with AUTH_SECRET, when the example has a
 * backend to mint tokens; the REST API on; webhooks to the backend's `webhook=` path), then its
 * backend, its node files in order, its browser files, and the webhook check.
 */
export async function runExample(app: string, browser: Browser, example: DocExample): Promise<void> {
  const backendFile = example.files.find((file) => file.run === 'backend')
  const origin = await startOrigin()
  const server = await startTestServer({
    auth: backendFile ? { mode: 'jwt', secret: EXAMPLE_SECRETS.AUTH_SECRET } : { mode: 'none' },
    apiSecret: EXAMPLE_SECRETS.API_SECRET,
    ...(backendFile?.webhook
      ? {
          backends: {
            events: {
              kind: 'webhook',
              url: `${origin.url}${backendFile.webhook}`,
              secret: EXAMPLE_SECRETS.WEBHOOK_SECRET,
              debounceMs: 100,
            },
          },
        }
      : {}),
  })
  let backend: { url: string; child: ChildProcess } | undefined
  try {
    for (const file of example.files) writeFileSync(fileIn(app, example, file), withServer(file.code, server))
    if (backendFile) {
      backend = await startBackend(fileIn(app, example, backendFile), backendFile)
      origin.state.backend = backend.url
    }
    for (const file of example.files.filter((f) => f.run === 'node'))
      await runNodeFile(fileIn(app, example, file), file)
    for (const file of example.files.filter((f) => f.run === 'browser')) {
      await runInBrowser(browser, app, fileIn(app, example, file), file, origin)
    }
    if (backend && backendFile?.webhook) await checkWebhooks(server, backend.url, backendFile, origin)
  } finally {
    backend?.child.kill()
    origin.close()
    await server.stop()
  }
}
