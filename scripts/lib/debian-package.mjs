// Installs a Debian package the tests need when its binary is missing (CI machines start bare).
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

let updated = false

/**
 * Makes sure `binary` exists, installing Debian package `name` with apt-get if it does not.
 * @param {string} name
 * @param {string} binary
 */
export function ensureDebianPackage(name, binary) {
  if (existsSync(binary)) return
  console.log(`[test] ${binary} is missing: installing the Debian package ${name}`)
  const asRoot = process.getuid?.() === 0 ? [] : ['sudo', '-n']
  const run = (/** @type {[string, ...string[]]} */ args) =>
    execFileSync(asRoot[0] ?? args[0], [...asRoot.slice(1), ...(asRoot.length ? args : args.slice(1))], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    })
  try {
    if (!updated) run(['apt-get', 'update', '-qq'])
    updated = true
    run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', name])
  } catch (error) {
    const why = /** @type {Error} */ (error).message
    throw new Error(`could not install ${name} (needs root or passwordless sudo): ${why}`)
  }
  if (!existsSync(binary)) throw new Error(`installed ${name} but ${binary} is still missing`)
}

/**
 * The newest Debian PostgreSQL server's bin folder (`/usr/lib/postgresql/<version>/bin`), or null.
 * @param {(path: string) => boolean} [exists]
 * @param {(path: string) => string[]} [list]
 * @returns {string | null}
 */
export function debianPostgresBin(exists = existsSync, list = readdirSync) {
  const base = '/usr/lib/postgresql'
  const versions = exists(base) ? list(base).filter((v) => exists(join(base, v, 'bin', 'postgres'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  return newest ? join(base, newest, 'bin') : null
}
