import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freePort } from '@symphony/dev-scripts/services'
import { connectSynced, destroyClients, uniqueRoom } from '@symphony/test-helpers/clients'
import { isolatedDatabaseUrl, testMetadataSink } from '@symphony/test-helpers/test-database'
import { startTestServer, stopTestServers } from '@symphony/test-helpers/test-server'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const API_SECRET = 'api-secret-for-tests-0123456789abcdef'
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`

/**
 * A backend of its own outside the repository, on the packed `@symphony/node` (and the
 * `@symphony/client` it depends on): it lists rooms, changes one with `mutate`, and verifies the
 * webhook the server sends for that change.
 */
const BACKEND = `
import { createServer } from 'node:http'
import { createRoomsApi, verifyWebhook, WebhookVerificationError } from '@symphony/node'

const { SYNC_URL, API_SECRET, WEBHOOK_SECRET, PORT, PREFIX } = process.env
const api = createRoomsApi({ url: SYNC_URL, secret: API_SECRET })
const verified = []
let refused = 0
const receiver = createServer(async (request, response) => {
  const chunks = []
  for await (const chunk of request) chunks.push(chunk)
  try {
    verified.push(verifyWebhook(request.headers, Buffer.concat(chunks), WEBHOOK_SECRET))
    response.writeHead(204).end()
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    refused++
    response.writeHead(400).end()
  }
})
await new Promise((resolve) => receiver.listen(Number(PORT), '127.0.0.1', resolve))

const room = PREFIX + 'todos'
const length = await api.mutate(room, (doc) => {
  const todos = doc.getArray('todos')
  todos.push([{ text: 'from the backend', done: false }])
  return todos.length
})
const until = async (check) => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}
await until(() => verified.some((event) => event.type === 'document.updated' && event.data.room === room))
await until(async () => (await api.list({ prefix: PREFIX })).rooms.some((r) => r.name === room && r.updatedAt))
const names = []
let cursor = null
do {
  const page = await api.list({ prefix: PREFIX, limit: 1, cursor })
  names.push(...page.rooms.map((r) => r.name))
  cursor = page.nextCursor
} while (cursor)
console.log(JSON.stringify({ length, document: await api.getDocument(room), names, refused }))
receiver.close()
`

/** What the backend's types must allow and refuse, checked with tsc against the tarball's declarations. */
const TYPES = `
import { createRoomsApi, type RoomList, verifyWebhook, type WebhookEvent } from '@symphony/node'
import type * as Y from 'yjs'
const api = createRoomsApi({ url: 'http://localhost:1234', secret: 'x'.repeat(32) })
export const page: Promise<RoomList> = api.list({ prefix: 'team-7/', limit: 10, cursor: null })
export const count: Promise<number> = api.mutate('r', (doc: Y.Doc) => doc.getArray<string>('a').length)
const event: WebhookEvent = verifyWebhook(new Headers(), '{}', 'whsec_x')
export const room: string | null = event.type === 'user.joined' ? event.data.userId : null
`

describe('@symphony/node installed from its tarball into a backend outside the repository', () => {
  let app: string
  before(() => {
    app = mkdtempSync(join(tmpdir(), 'symphony-backend-'))
    const packed = execFileSync('node', [join(ROOT, 'scripts/pack-packages.mjs'), join(app, 'tarballs')], {
      encoding: 'utf8',
    })
    const tarballs = packed
      .trim()
      .split('\n')
      .filter((tarball) => /symphony-(node|client)-/.test(tarball))
    assert.equal(tarballs.length, 2, 'node and the client it depends on')
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'scratch-backend', private: true, type: 'module' }),
    )
    execFileSync(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        ...tarballs,
        'yjs@^13.6.33',
        '@types/node@^20',
      ],
      { cwd: app, stdio: 'pipe' },
    )
  })
  after(async () => {
    destroyClients()
    await stopTestServers()
    rmSync(app, { recursive: true, force: true })
  })

  it('ships types that resolve yjs from the app and narrow webhook events', () => {
    writeFileSync(join(app, 'check.ts'), TYPES)
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const options = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext']
    execFileSync('node', [tsc, ...options, '--target', 'es2022', '--lib', 'es2022,dom', 'check.ts'], {
      cwd: app,
      stdio: 'pipe',
    })
  })

  it('lists rooms, changes one with mutate and verifies the webhook the server sends for it', async () => {
    const port = await freePort()
    const url = await isolatedDatabaseUrl()
    const serverId = uniqueRoom('server')
    const t = await startTestServer({
      serverId,
      apiSecret: API_SECRET,
      metadataSampleIntervalMs: 50,
      backends: {
        events: {
          kind: 'webhook',
          url: `http://127.0.0.1:${port}/hooks`,
          secret: WEBHOOK_SECRET,
          debounceMs: 50,
        },
      },
      adapters: { metadata: testMetadataSink(serverId, url) },
    })
    const prefix = `${uniqueRoom('app')}/`
    const user = await connectSynced(t.wsUrl, encodeURIComponent(`${prefix}todos`)) // the room stays loaded
    writeFileSync(join(app, 'backend.mjs'), BACKEND)
    const child = spawn(process.execPath, ['backend.mjs'], {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        SYNC_URL: t.httpUrl,
        API_SECRET,
        WEBHOOK_SECRET,
        PORT: String(port),
        PREFIX: prefix,
      },
    })
    let output = ''
    let errors = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.stderr.on('data', (chunk) => {
      errors += chunk
    })
    const code = await new Promise((resolve) => child.once('exit', resolve))
    assert.equal(code, 0, errors)
    assert.deepEqual(JSON.parse(output), {
      length: 1,
      document: { todos: [{ text: 'from the backend', done: false }] },
      names: [`${prefix}todos`],
      refused: 0,
    })
    assert.deepEqual(user.doc.getArray('todos').toJSON(), [{ text: 'from the backend', done: false }])
  })
})
