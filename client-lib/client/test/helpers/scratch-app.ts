import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import { freePort } from '@symphony/dev-scripts/services'
import { launchChromium } from '@symphony/test-helpers/browser'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import { build } from 'esbuild'
import type { Browser } from 'playwright-core'

export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))

/** TypeScript's compiler, the repository's own. */
export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc')

/** The first ```lang block under `heading` in a Markdown file of the repository, as a developer copies it. */
export function codeBlock(file: string, heading: string, lang: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const at = text.indexOf(`\n${heading}\n`)
  assert.ok(at >= 0, `${file} has "${heading}"`)
  // The fence may carry the docs' marks after the language (docs/development.md, "Code blocks that run").
  const code = new RegExp(`\`\`\`${lang}(?:[ \\t][^\\n]*)?\\n([\\s\\S]*?)\`\`\``).exec(text.slice(at))?.[1]
  assert.ok(code, `${file} has a ${lang} block under "${heading}"`)
  return code
}

/** The first ```lang block under "## Quick start" in a package's README. */
export function quickStart(packageDir: string, lang: string): string {
  return codeBlock(join(packageDir, 'README.md'), '## Quick start', lang)
}

/** Replaces `from` (which must be there) with `to`, so a doc change that breaks the test is loud. */
export function swap(code: string, from: string, to: string): string {
  assert.ok(code.includes(from), `the code still has ${from}`)
  return code.replace(from, to)
}

/** `name@version` for each of `names`, at the version client-lib/client (or client-lib/react) pins as a devDependency. */
export function pinned(...names: string[]): string[] {
  const pins = ['client-lib/react', 'client-lib/client'].reduce<Record<string, unknown>>(
    (all, dir) =>
      Object.assign(all, JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')).devDependencies),
    {},
  )
  return names.map((name) => {
    const version = pins[name]
    assert.ok(typeof version === 'string', `client-lib pins ${name}`)
    return `${name}@${version}`
  })
}

/**
 * A new app outside the repository that installs the packed tarballs of the three packages and
 * `packages`, as a developer would before they are on the registry: nothing resolves from the
 * workspace.
 */
export function scratchApp(packages: string[], { server = false } = {}): string {
  const app = mkdtempSync(join(tmpdir(), 'symphony-app-'))
  const packed = execFileSync('node', [join(ROOT, 'scripts/pack-packages.mjs'), join(app, 'tarballs')], {
    encoding: 'utf8',
  })
  const all = packed.trim().split('\n')
  assert.equal(all.length, 4, 'client, react, node and the server')
  // The sync server only for the examples that embed it (docs/embedding.md): it installs the AWS SDK.
  const tarballs = server ? all : all.filter((tarball) => !/symphony-server-/.test(tarball))
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }),
  )
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, ...packages], {
    cwd: app,
    stdio: 'pipe',
  })
  return app
}

/**
 * Type-checks `files` of the app (strict, modules resolved as a bundler does, the declarations
 * of the packages it installed included); throws with tsc's output.
 */
export function typeCheck(app: string, files: string[]): void {
  const tsc = TSC
  const options = ['--noEmit', '--strict', '--module', 'esnext', '--moduleResolution', 'bundler']
  const more = ['--jsx', 'react-jsx', '--target', 'es2022', '--lib', 'esnext,dom,dom.iterable']
  try {
    execFileSync('node', [tsc, ...options, ...more, ...files], { cwd: app, stdio: 'pipe' })
  } catch (error) {
    const { stdout } = error as { stdout?: Buffer }
    throw new Error(`tsc: ${stdout?.toString() ?? error}`)
  }
}

/** Bundles `source` with esbuild from the app's folder; returns the code and the files it took. */
export async function bundleIn(app: string, source: string, loader: 'js' | 'ts' | 'tsx') {
  const result = await build({
    stdin: { contents: source, resolveDir: app, loader },
    bundle: true,
    format: 'esm',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    minify: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  return { code: result.outputFiles[0]?.text ?? '', inputs: Object.keys(result.metafile.inputs) }
}

const DEFAULT_BODY = '<div id="root"></div><p id="status"></p><p id="todos"></p><p id="people"></p>'

/**
 * Serves a page running `script` on its own origin, `body` before it; `/api/…` goes to the app's
 * backend at `backend`.
 */
export async function serveApp(
  script: string,
  { backend, body = DEFAULT_BODY }: { backend?: string; body?: string } = {},
): Promise<{ url: string; server: Server }> {
  const html = `<!doctype html><meta charset="utf-8">${body}<script type="module">${script}</script>`
  const server = createServer(async (request, response) => {
    if (backend && request.url?.startsWith('/api/')) {
      const answer = await fetch(`${backend}${request.url}`)
      response.writeHead(answer.status, {
        'Content-Type': answer.headers.get('content-type') ?? 'text/plain',
      })
      response.end(await answer.text())
      return
    }
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
    response.end(html)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }
}

/** The app's backend: its process and its URL. */
export interface Backend {
  child: ChildProcess
  url: string
}

/**
 * The node README's express route, run as the app's backend with the server's secret: it signs
 * tokens for rooms under `team-7/`.
 */
export async function startBackend(app: string): Promise<Backend> {
  writeFileSync(join(app, 'backend.mjs'), quickStart('client-lib/node', 'js'))
  const port = await freePort()
  const child = spawn(process.execPath, ['backend.mjs'], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), AUTH_SECRET: TEST_SECRET },
    stdio: 'ignore',
  })
  const url = `http://127.0.0.1:${port}`
  for (;;) {
    const up = await fetch(`${url}/api/symphony-token?room=team-7/probe`).then(
      (response) => response.ok,
      () => false,
    )
    if (up) return { child, url }
    if (child.exitCode !== null) throw new Error(`the backend exited with ${child.exitCode}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** What a suite's browser tests of a scratch app share; set before its tests, stopped after. */
export interface AppSuite {
  app: string
  backend: Backend
  browser: Browser
  /** The pages' servers (`serveApp`), closed after the suite. */
  sites: Server[]
}

/**
 * Registers the hooks of a suite (call it inside `describe`) that make the scratch app of
 * `packages`, its backend and Chromium before the tests, and stop and delete them after.
 */
export function appSuite(packages: string[]): AppSuite {
  const suite = { sites: [] as Server[] } as AppSuite
  before(async () => {
    suite.app = scratchApp(packages)
    suite.backend = await startBackend(suite.app)
    suite.browser = await launchChromium()
  })
  after(async () => {
    for (const site of suite.sites) site.close()
    suite.backend?.child.kill()
    await suite.browser?.close()
    if (suite.app) rmSync(suite.app, { recursive: true, force: true })
  })
  return suite
}

/** `name@<the version the repository has>`, or `name` (the registry's latest) when it has none. */
export function repositoryVersion(name: string): string {
  const manifest = join(ROOT, 'node_modules', name, 'package.json')
  return existsSync(manifest) ? `${name}@${JSON.parse(readFileSync(manifest, 'utf8')).version}` : name
}
