// Packs the packages apps install (client-lib/*, and the server for apps that embed it) into tarballs, exactly as `npm publish` would
// ship them. Run after `npm run build`: node scripts/pack-packages.mjs [destination]
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The workspaces published to the registry, each with README, LICENSE and CHANGELOG. */
export const PUBLISHED_PACKAGES = ['client-lib/client', 'client-lib/react', 'client-lib/node', 'server']

/** Packs every published package into `destination`; returns the tarballs' absolute paths. */
export function packPackages(destination = resolve(root, 'client-lib/dist-packages')) {
  mkdirSync(destination, { recursive: true })
  const workspaces = PUBLISHED_PACKAGES.flatMap((path) => ['--workspace', path])
  const output = execFileSync('npm', ['pack', '--json', ...workspaces, '--pack-destination', destination], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return JSON.parse(output).map((packed) => resolve(destination, packed.filename))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const tarball of packPackages(process.argv[2] && resolve(process.argv[2]))) console.log(tarball)
}
