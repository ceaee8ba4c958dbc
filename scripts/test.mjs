#!/usr/bin/env node
// Runs every package's test suite with Node's test runner. Tests are TypeScript, run through tsx;
// --expose-gc lets the memory tests force a collection. Arguments narrow the run to those files.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureDebianPackage } from './lib/debian-package.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const packages = ['server', 'client-lib', 'dashboard-server', 'loadtest', 'infra']

function testFiles(folder) {
  let entries
  try {
    entries = readdirSync(folder, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return testFiles(path)
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : []
  })
}

const files =
  process.argv.length > 2 ? process.argv.slice(2) : packages.flatMap((p) => testFiles(join(root, p, 'test')))
if (files.length === 0) {
  console.error('no test files found')
  process.exit(1)
}
// The browser tests drive Debian's Chromium through playwright-core.
ensureDebianPackage('chromium', '/usr/bin/chromium')

const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--expose-gc', '--test', '--test-concurrency=2', '--test-timeout=120000', ...files],
  { cwd: root, stdio: 'inherit' },
)
process.exit(result.status ?? 1)
