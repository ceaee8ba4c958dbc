// The Node.js that ships (the Docker images) is the Node.js the tests run on: the version pinned in
// the root package.json's `devEngines.runtime`. A machine whose own Node is another version gets
// that one from the npm registry (`node-linux-<arch>` packages hold the official binaries) into
// .services/, once, and the test and start scripts re-run themselves on it.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** The pinned version, e.g. `24.21.0`: the only place it is written is the root package.json. */
export const PINNED_NODE_VERSION = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devEngines
  .runtime.version

const ARCHITECTURES = { x64: 'x64', arm64: 'arm64' }

/** The pinned Node's binary, installed under .services/ from the npm registry when missing. */
export function pinnedNodeBinary() {
  if (process.versions.node === PINNED_NODE_VERSION) return process.execPath
  const arch = ARCHITECTURES[process.arch]
  if (process.platform !== 'linux' || !arch) {
    throw new Error(
      `no Node ${PINNED_NODE_VERSION} package for ${process.platform}-${process.arch}: install it`,
    )
  }
  const name = `node-linux-${arch}`
  const folder = join(root, '.services', `node-${PINNED_NODE_VERSION}-linux-${arch}`)
  const binary = join(folder, 'node_modules', name, 'bin', 'node')
  if (existsSync(binary)) return binary
  console.log(
    `[node] Node ${PINNED_NODE_VERSION} is pinned; installing ${name}@${PINNED_NODE_VERSION} into .services/`,
  )
  // Into a folder of its own first, then renamed: a second script starting meanwhile never sees half of it.
  const staging = `${folder}.${process.pid}.tmp`
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  execFileSync(
    npm,
    [
      'install',
      '--prefix',
      staging,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `${name}@${PINNED_NODE_VERSION}`,
    ],
    // Not the workspace's settings: this is a folder of its own.
    { stdio: ['ignore', 'ignore', 'inherit'], cwd: staging, env: withoutNpmConfig(process.env) },
  )
  if (!existsSync(join(staging, 'node_modules', name, 'bin', 'node'))) {
    throw new Error(`installed ${name}@${PINNED_NODE_VERSION} but its bin/node is missing`)
  }
  try {
    renameSync(staging, folder)
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    if (!existsSync(binary)) throw error // another script won the race otherwise
  }
  return binary
}

/**
 * Runs this script again on the pinned Node unless it already runs there, with that Node first on
 * PATH so everything the script starts by name (`node`, `npm`, `npx`) runs on it too. Resolves
 * only when the script should go on here; otherwise exits with the re-run's status.
 */
export async function runOnPinnedNode(scriptUrl) {
  if (process.versions.node === PINNED_NODE_VERSION) return
  process.exit(await runScript(fileURLToPath(scriptUrl), process.argv.slice(2)))
}

/** Runs `script` with `args` on the pinned Node; resolves to its exit status. */
async function runScript(script, args) {
  const binary = pinnedNodeBinary()
  const child = spawn(binary, [script, ...args], {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${dirname(binary)}${delimiter}${process.env.PATH ?? ''}` },
  })
  // Ctrl-C reaches the whole process group; a SIGTERM sent to this process alone is passed on.
  process.on('SIGINT', () => {})
  process.on('SIGTERM', () => child.kill('SIGTERM'))
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(error)
      resolve(1)
    })
    child.once('exit', (status, signal) => resolve(status ?? (signal === 'SIGINT' ? 130 : 143)))
  })
}

// `node scripts/lib/pinned-node.mjs <script> [args…]` runs a script on the pinned Node (the benches).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [script, ...args] = process.argv.slice(2)
  if (!script) {
    console.error('usage: node scripts/lib/pinned-node.mjs <script> [args…]')
    process.exit(2)
  }
  process.exit(await runScript(script, args))
}

/** The environment without npm's run-script settings (`npm_config_*`), so a nested npm acts on its own folder. */
function withoutNpmConfig(env) {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.toLowerCase().startsWith('npm_')))
}
