import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { Browser, Page } from 'playwright-core'
import { launchChromium } from '../../../server/test/helpers/browser.js'
import { uniqueRoom } from '../../../server/test/helpers/clients.js'
import { startTestServer, type TestServer } from '../../../server/test/helpers/test-server.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** The first ```lang block after `heading` in a package's README. */
function quickStart(packageDir: string, lang: string): string {
  const readme = readFileSync(join(ROOT, packageDir, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Quick start'))
  const code = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section)?.[1]
  assert.ok(code, `${packageDir}/README.md has a ${lang} quick start`)
  return code
}

/**
 * A new app outside the repository that installs the packed tarballs, as a developer would before
 * the packages are on the registry: nothing resolves from the workspace.
 */
function scratchApp(): string {
  const app = mkdtempSync(join(tmpdir(), 'symphony-app-'))
  const packed = execFileSync('node', [join(ROOT, 'scripts/pack-packages.mjs'), join(app, 'tarballs')], {
    encoding: 'utf8',
  })
  const tarballs = packed.trim().split('\n')
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }),
  )
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, 'yjs@^13.6.33'],
    {
      cwd: app,
      stdio: 'pipe',
    },
  )
  return app
}

/** Bundles `source` with esbuild from the app's folder; returns the code and the files it took. */
async function bundleIn(app: string, source: string): Promise<{ code: string; inputs: string[] }> {
  const result = await build({
    stdin: { contents: source, resolveDir: app, loader: 'js' },
    bundle: true,
    format: 'esm',
    minify: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  return { code: result.outputFiles[0]?.text ?? '', inputs: Object.keys(result.metafile.inputs) }
}

/** Serves one HTML page on its own origin, as an app would be. */
async function servePage(html: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html' })
    response.end(html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }
}

describe('the packed packages, installed into an app outside the repository', () => {
  let app: string
  let t: TestServer
  let browser: Browser
  before(async () => {
    app = scratchApp()
    t = await startTestServer()
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await t?.stop()
  })

  it('ships types for every entry point, resolved through the exports map', () => {
    writeFileSync(
      join(app, 'check.ts'),
      [
        "import { createClient, type Room } from '@symphony/client'",
        "import { CloseCode } from '@symphony/client/close-codes'",
        "import { isValidRoomName } from '@symphony/client/room-name'",
        "import { MESSAGE_SYNC_STATUS } from '@symphony/client/sync-status-protocol'",
        "const room: Room = createClient({ url: 'ws://localhost:1234' }).enter('r')",
        'const unsynced: boolean = room.hasUnsyncedChanges()',
        'export const used = [unsynced, CloseCode.GoingAway, isValidRoomName, MESSAGE_SYNC_STATUS]',
      ].join('\n'),
    )
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const options = ['--noEmit', '--strict', '--module', 'esnext', '--moduleResolution', 'bundler']
    execFileSync('node', [tsc, ...options, '--target', 'es2022', '--lib', 'es2022,dom', 'check.ts'], {
      cwd: app,
      stdio: 'pipe',
    })
  })

  it('imports in Node without touching browser globals', () => {
    const script = "const c = await import('@symphony/client'); console.log(typeof c.createClient)"
    const output = execFileSync('node', ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' })
    assert.equal(output.trim(), 'function')
  })

  it("runs the client README's quick start, bundled with esbuild, in two Chromium pages", async () => {
    const room = uniqueRoom('installed')
    const source = quickStart('client-lib/client', 'js')
      .replace("'ws://localhost:1234'", `'${t.wsUrl}'`)
      .replace("'my-room'", `'${room}'`)
    const { code, inputs } = await bundleIn(app, source)
    assert.ok(
      inputs.some((input) => input.includes('node_modules/@symphony/client/dist/')),
      'the client came from the installed tarball',
    )
    const page = await servePage(
      `<!doctype html><p id="status"></p><p id="todos"></p><p id="people"></p><script type="module">${code}</script>`,
    )
    const errors: string[] = []
    const open = async (): Promise<Page> => {
      const tab = await (await browser.newContext()).newPage()
      tab.on('pageerror', (error) => errors.push(error.message))
      await tab.goto(page.url)
      return tab
    }
    const tabs = [await open(), await open()]
    for (const tab of tabs) {
      await tab.waitForFunction(() => document.querySelector('#todos')?.textContent?.split(', ').length === 2)
      await tab.waitForFunction(() => document.querySelector('#status')?.textContent === 'synced')
    }
    assert.deepEqual(errors, [])
    page.server.close()
  })
})
