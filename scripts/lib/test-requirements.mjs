// What `npm test` needs besides Node, checked before anything builds or starts: on Debian (what CI
// runs) whatever is missing is installed with apt-get; anywhere else the check stops at once and
// says how to run the suite there. `node scripts/lib/test-requirements.mjs` runs the check alone.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { debianPostgresBin, ensureDebianPackage } from './debian-package.mjs'
import { PINNED_NODE_VERSION } from './pinned-node.mjs'
import { ensureCfnLint } from './services.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * One thing the suite needs besides Node: what it is, why, the Debian packages that provide it, and
 * whether this machine has it.
 * @typedef {{ what: string, why: string, debian: string[], found: boolean }} TestRequirement
 */
/**
 * What to do before the suite can run: lines that say what to do instead (`stop`), or the Debian
 * packages to install now (`install`, for the requirements named in `missing`), or neither.
 * @typedef {{ notes?: string[], stop?: string[], install?: undefined, missing?: undefined }
 *   | { notes: string[], install: string[], missing: string[], stop?: undefined }} TestPlan
 */

/**
 * The suite in a Debian container with the pinned Node, from the repository's folder (bash, zsh or PowerShell).
 * @type {string}
 */
export const CONTAINER_COMMAND =
  `docker run --rm -it --privileged -v "\${PWD}:/symphony" -v /symphony/node_modules -v /symphony/.services ` +
  `-w /symphony node:${PINNED_NODE_VERSION}-bookworm bash -c 'npm ci && npm test'`

/**
 * Whether `command args` runs and exits 0 (output ignored).
 * @param {string} command
 * @param {string[]} args
 */
function succeeds(command, args) {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Whether `python3 -m venv` can make a venv with pip (Debian's python3 needs python3-venv for it). */
const pythonMakesVenvs = () => succeeds('python3', ['-c', 'import venv, ensurepip'])

/**
 * What the suite needs here, each with whether it is found (the probes are this machine's unless given).
 * @param {{
 *   exists?: (path: string) => boolean,
 *   postgresBin?: () => string | null,
 *   python?: () => boolean,
 * }} [probes]
 * @returns {TestRequirement[]}
 */
export function testRequirements({
  exists = existsSync,
  postgresBin = () => debianPostgresBin(exists),
  python = pythonMakesVenvs,
} = {}) {
  const venv = join(root, '.services', 'venv')
  const pipToolsInstalled =
    exists(join(venv, '.moto-installed')) && exists(join(venv, '.cfn-lint-1.58.0-installed'))
  return [
    {
      what: 'Redis (redis-server)',
      why: 'journal and cluster tests',
      debian: ['redis-server'],
      found: exists('/usr/bin/redis-server'),
    },
    {
      what: 'PostgreSQL 15 or newer',
      why: 'metadata tests, each run on a throwaway cluster',
      debian: ['postgresql'],
      found: postgresBin() !== null,
    },
    {
      what: 'Chromium',
      why: 'browser tests, driven by playwright-core',
      debian: ['chromium'],
      found: exists('/usr/bin/chromium'),
    },
    {
      what: 'Python 3 with venv',
      why: 'moto, the S3 and DynamoDB emulator, and cfn-lint, the CloudFormation linter, pip-installed into .services/venv on the first run',
      debian: ['python3', 'python3-venv'],
      found: pipToolsInstalled || python(),
    },
    {
      what: 'OpenSSL',
      why: 'certificates for the TLS Redis tests',
      debian: ['openssl'],
      found: exists('/usr/bin/openssl'),
    },
  ]
}

/**
 * What to do before the suite can run on this machine: `{ install }` (Debian packages apt-get can
 * install now), `{ stop }` (lines saying what to do instead), or `{}` when all is there. `notes`
 * are said either way.
 * @param {{
 *   platform?: string,
 *   requirements?: TestRequirement[],
 *   hasAptGet?: boolean,
 *   isRoot?: boolean,
 *   canSudo?: () => boolean,
 * }} [machine]
 * @returns {TestPlan}
 */
export function testPlan({
  platform = process.platform,
  requirements = testRequirements(),
  hasAptGet = existsSync('/usr/bin/apt-get'),
  isRoot = process.getuid?.() === 0,
  canSudo = () => canSudoWithoutPassword(),
} = {}) {
  const needs = `npm test needs ${requirements.map((r) => r.what).join(', ')}, and runs as root (the full-disk test mounts a tmpfs).`
  if (platform !== 'linux') {
    return {
      stop: [
        needs,
        `It runs on Debian Linux, as CI does: the suite starts Debian's redis-server, PostgreSQL and Chromium.`,
        `On ${platform === 'darwin' ? 'macOS' : platform === 'win32' ? 'Windows' : platform}, run it in a Debian container (Docker Desktop), from this folder:`,
        '',
        `  ${CONTAINER_COMMAND}`,
        '',
        'Here, `npm run test:unit` runs the in-memory core tests, which need none of them.',
      ],
    }
  }
  const notes = isRoot ? [] : ['not root: server/test/full-disk.test.ts will fail (it mounts a tmpfs)']
  const missing = requirements.filter((r) => !r.found)
  if (missing.length === 0) return { notes }
  const packages = [...new Set(missing.flatMap((r) => r.debian))]
  const missingHere = [needs, 'Missing here:', ...missing.map((r) => `  - ${r.what}: ${r.why}`)]
  if (!hasAptGet) {
    return {
      notes,
      stop: [
        ...missingHere,
        `The suite expects Debian's packages (${packages.join(', ')}) at Debian's paths. On another`,
        'Linux, run it in a Debian container, from this folder:',
        '',
        `  ${CONTAINER_COMMAND}`,
      ],
    }
  }
  if (!isRoot && !canSudo()) {
    return {
      notes,
      stop: [
        ...missingHere,
        'Install them, then run npm test again:',
        '',
        `  sudo apt-get install -y ${packages.join(' ')}`,
      ],
    }
  }
  return { notes, install: packages, missing: missing.map((r) => r.what) }
}

const canSudoWithoutPassword = () => succeeds('sudo', ['-n', 'true'])

/**
 * Checks, installs what apt-get can, and exits with the reasons when the suite cannot run here;
 * then installs cfn-lint into .services/venv when it is missing (the infra tests lint the templates).
 */
export async function ensureTestRequirements() {
  ensureSystemRequirements()
  await ensureCfnLint()
}

function ensureSystemRequirements() {
  const plan = testPlan()
  for (const note of plan.notes ?? []) console.log(`[test] ${note}`)
  if (plan.stop) {
    console.error(plan.stop.join('\n'))
    process.exit(1)
  }
  if (!plan.install) return
  console.log(
    `[test] missing ${plan.missing.join(', ')}: installing Debian's ${plan.install.join(', ')} with apt-get`,
  )
  for (const name of plan.install) ensureDebianPackage(name, `/usr/share/doc/${name}/copyright`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await ensureTestRequirements()
