import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { launchChromium } from '@symphony/test-helpers/browser'
import {
  type DocExample,
  docExamples,
  fencedBlocks,
  repositoryPages,
} from '@symphony/test-helpers/doc-examples'
import type { Browser } from 'playwright-core'
import { runExample } from './helpers/run-doc-example.js'
import { scratchApp } from './helpers/scratch-app.js'
import { embedsServer, exampleDependencies, typeCheckExamples } from './helpers/type-check-doc-examples.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

const documented = docExamples(repositoryPages(ROOT))

/** The node README's express route, as the pages have it. */
function tokenRoute(): DocExample['files'][number] {
  const file = documented.examples
    .find((e) => e.name === 'token-route')
    ?.files.find((f) => f.path === 'backend.mjs')
  assert.ok(file, 'the node README marks its route example=token-route/backend.mjs')
  return file
}

/** The getToken docs/deploy.md had: the token read with .text() from a route that answers JSON. */
const TEXT_GET_TOKEN = `import { createClient } from '@symphony/client'

const client = createClient({ url: '<WebSocketUrl>', getToken: () => fetch('/api/symphony-token?room=team-7%2Fboard').then((r) => r.text()) })
const room = client.enter('team-7/board')
`

/** A webhook receiver on Standard Webhooks; `verify: false` answers 204 to anything. */
function receiver(verify: boolean): string {
  return `import { createServer } from 'node:http'
import { Webhook } from 'standardwebhooks'

const webhook = new Webhook(process.env.WEBHOOK_SECRET)
createServer(async (request, response) => {
  let body = ''
  for await (const chunk of request) body += chunk
  try {
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))
    ${verify ? 'webhook.verify(body, headers)' : 'JSON.parse(body)'}
    response.writeHead(204).end()
  } catch {
    response.writeHead(400).end()
  }
}).listen(Number(process.env.PORT))
`
}

describe('the convention: code blocks marked on their fence', () => {
  it('reads the language, example=, run=, webhook= and words of an info string, and indented fences', () => {
    const [block, listed] = fencedBlocks({
      page: 'p.md',
      text: '# T\n\n```js example=a/b.mjs run=backend webhook=/hooks\nconst x = 1\n```\n\n- step\n\n  ```ts fragment\n  let y\n  ```\n',
    })
    assert.equal(block?.lang, 'js')
    assert.deepEqual(Object.fromEntries(block?.attributes ?? []), {
      example: 'a/b.mjs',
      run: 'backend',
      webhook: '/hooks',
    })
    assert.equal(block?.code, 'const x = 1\n')
    assert.equal(block?.line, 3)
    assert.deepEqual([listed?.lang, listed?.words, listed?.code], ['ts', ['fragment'], 'let y\n'])
  })

  it("joins one file's blocks in order; files of one example may come from several pages", () => {
    const { examples, problems } = docExamples([
      {
        page: 'a.md',
        text: '```js example=ex/app.js run=browser\none()\n```\ntext\n```js example=ex/app.js\ntwo()\n```\n',
      },
      { page: 'b.md', text: '```js example=ex/server.mjs run=backend\nserve()\n```\n' },
    ])
    assert.deepEqual(problems, [])
    assert.deepEqual(examples, [
      {
        name: 'ex',
        files: [
          {
            path: 'app.js',
            lang: 'js',
            run: 'browser',
            code: 'one()\ntwo()\n',
            sources: ['a.md:1', 'a.md:5'],
          },
          { path: 'server.mjs', lang: 'js', run: 'backend', code: 'serve()\n', sources: ['b.md:1'] },
        ],
      },
    ])
  })

  it('reports unmarked code, one file on two pages, two backends, and unknown attributes or roles', () => {
    const { problems } = docExamples([
      {
        page: 'a.md',
        text: '```js\nx()\n```\n```sh\nls\n```\n```js example=ex/app.js run=server\n```\n```ts example=ex/b.ts colour=red\n```\n',
      },
      {
        page: 'b.md',
        text: '```js example=ex/app.js\n```\n```js example=ex/one.mjs run=backend\n```\n```js example=ex/two.mjs run=backend\n```\n',
      },
      { page: 'c.md', text: '```js example=nofile\n```\n```js example=ex/c.js run=node webhook=/h\n```\n' },
    ])
    assert.deepEqual(problems, [
      'a.md:1: a js block with neither example=<example>/<file> nor fragment',
      'a.md:7: run=server is not backend, browser or node',
      'a.md:9: unknown attribute colour=',
      "b.md:1: ex/app.js is already on a.md:7: a file's blocks are on one page",
      'c.md:1: example=nofile is not <example>/<file> with a .js/.mjs/.ts/.tsx… file',
      'c.md:3: webhook=<path starting with /> goes with run=backend',
      'example ex has 2 backends (one.mjs, two.mjs): one at most',
    ])
  })

  it('every JavaScript and TypeScript block of the repository is marked, and marked well', () => {
    assert.deepEqual(documented.problems, [])
    const names = documented.examples.map((example) => example.name)
    for (const name of [
      'client-quick-start',
      'react-quick-start',
      'token-route',
      'auth-guide',
      'rooms-api',
    ]) {
      assert.ok(names.includes(name), `example ${name}`)
    }
  })
})

describe("the documentation's code, type-checked and run from the packed packages", () => {
  let app: string
  let browser: Browser
  const fixtures: DocExample[] = [
    {
      name: 'disagreeing-token',
      files: [
        tokenRoute(),
        {
          path: 'app.js',
          lang: 'js',
          run: 'browser',
          code: TEXT_GET_TOKEN,
          sources: ['the old docs/deploy.md'],
        },
      ],
    },
    {
      name: 'webhook-verified',
      files: [
        {
          path: 'receiver.mjs',
          lang: 'js',
          run: 'backend',
          webhook: '/hooks',
          code: receiver(true),
          sources: ['verified'],
        },
      ],
    },
    {
      name: 'webhook-unverified',
      files: [
        {
          path: 'receiver.mjs',
          lang: 'js',
          run: 'backend',
          webhook: '/hooks',
          code: receiver(false),
          sources: ['unverified'],
        },
      ],
    },
  ]
  before(async () => {
    const examples = [...documented.examples, ...fixtures]
    app = scratchApp(exampleDependencies(examples), { server: embedsServer(examples) })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    if (app) rmSync(app, { recursive: true, force: true })
  })

  it('every file type-checks against the installed packages', () => {
    typeCheckExamples(app, [...documented.examples, ...fixtures])
  })

  // Examples without run= files are type-checked only (above).
  for (const example of documented.examples.filter((e) => e.files.some((file) => file.run))) {
    const roles = example.files.map((file) => `${file.path}${file.run ? ` (${file.run})` : ''}`).join(', ')
    it(`runs example ${example.name}: ${roles}`, async () => {
      await runExample(app, browser, example)
    })
  }

  it("catches two pages that disagree: a getToken reading .text() from the node README's JSON route", async () => {
    const [disagreeing] = fixtures
    await assert.rejects(runExample(app, browser, disagreeing as DocExample), (error: Error) => {
      assert.match(error.message, /the old docs\/deploy\.md: a room reported an error/)
      assert.match(error.message, /team-7\/board: CONNECTION_FAILED/)
      return true
    })
  })

  it('checks that a webhook receiver verifies: a forged signature must be refused', async () => {
    await runExample(app, browser, fixtures[1] as DocExample)
    await assert.rejects(
      runExample(app, browser, fixtures[2] as DocExample),
      /answered 204 to a forged signature/,
    )
  })
})
