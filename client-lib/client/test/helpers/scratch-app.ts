import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url))

/**
 * A new app outside the repository that installs the packed tarballs of the three packages, as a
 * developer would before they are on the registry (nothing resolves from the workspace), and
 * `dependencies` (npm specs) from the registry.
 */
export function scratchApp(dependencies: string[]): string {
  const app = mkdtempSync(join(tmpdir(), 'symphony-app-'))
  const packed = execFileSync('node', [join(ROOT, 'scripts/pack-packages.mjs'), join(app, 'tarballs')], {
    encoding: 'utf8',
  })
  const tarballs = packed.trim().split('\n')
  assert.equal(tarballs.length, 3, 'client, react and node')
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }),
  )
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, ...dependencies],
    {
      cwd: app,
      stdio: 'pipe',
    },
  )
  return app
}

/** `name@<the version the repository has>`, or `name` (the registry's latest) when it has none. */
export function repositoryVersion(name: string): string {
  const manifest = join(ROOT, 'node_modules', name, 'package.json')
  return existsSync(manifest) ? `${name}@${JSON.parse(readFileSync(manifest, 'utf8')).version}` : name
}

/** TypeScript's compiler, the repository's own. */
export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc')
