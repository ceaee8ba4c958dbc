import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import {
  CONTAINER_COMMAND,
  type TestRequirement,
  testPlan,
  testRequirements,
} from '@symphony/dev-scripts/test-requirements'

const rootPackage = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))

/** A machine that has the files in `has` (and Python with venv when `python`). */
function requirementsOn(has: string[], python = true): TestRequirement[] {
  return testRequirements({
    exists: (path) => has.includes(path),
    postgresBin: () => (has.includes('postgres') ? '/usr/lib/postgresql/15/bin' : null),
    python: () => python,
  })
}

const EVERYTHING = ['/usr/bin/redis-server', 'postgres', '/usr/bin/chromium', '/usr/bin/openssl']

describe('what npm test needs, said before anything builds', () => {
  it('is the first thing npm test runs', () => {
    assert.match(rootPackage.scripts.test, /^node scripts\/lib\/test-requirements\.mjs && /)
  })

  it('names Redis, PostgreSQL, Chromium, Python for moto and OpenSSL, with what each is for', () => {
    const requirements = requirementsOn([], false)
    assert.deepEqual(
      requirements.map((r) => r.what),
      ['Redis (redis-server)', 'PostgreSQL 15 or newer', 'Chromium', 'Python 3 with venv', 'OpenSSL'],
    )
    for (const r of requirements) assert.ok(r.why.length > 0 && r.debian.length > 0 && !r.found)
  })

  it('on macOS and Windows: stops at once, with the Debian container command', () => {
    for (const [platform, name] of [
      ['darwin', 'macOS'],
      ['win32', 'Windows'],
    ]) {
      const plan = testPlan({ platform, requirements: requirementsOn(EVERYTHING) })
      const text = plan.stop?.join('\n') ?? ''
      assert.match(text, /npm test needs Redis.*PostgreSQL.*Chromium.*Python.*OpenSSL/)
      assert.ok(text.includes(`On ${name}, run it in a Debian container`))
      assert.ok(text.includes(CONTAINER_COMMAND))
      assert.match(text, /npm run test:unit/)
    }
    assert.match(CONTAINER_COMMAND, /--privileged .*node:\d+\.\d+\.\d+-bookworm .*npm ci && npm test/)
  })

  it('docs/development.md shows the same container command, with the pinned Node', () => {
    const page = readFileSync(new URL('../../docs/development.md', import.meta.url), 'utf8')
    assert.ok(page.includes(`\n${CONTAINER_COMMAND}\n`))
    assert.ok(CONTAINER_COMMAND.includes(`node:${rootPackage.devEngines.runtime.version}-bookworm`))
  })

  it('on Debian as root: nothing to do when all is there, else the missing packages to install', () => {
    const linux = { platform: 'linux', hasAptGet: true, isRoot: true }
    assert.deepEqual(testPlan({ ...linux, requirements: requirementsOn(EVERYTHING) }), { notes: [] })
    const plan = testPlan({
      ...linux,
      requirements: requirementsOn(['/usr/bin/redis-server', 'postgres'], false),
    })
    assert.deepEqual(plan.install, ['chromium', 'python3', 'python3-venv', 'openssl'])
    assert.deepEqual(plan.missing, ['Chromium', 'Python 3 with venv', 'OpenSSL'])
    assert.equal(plan.stop, undefined)
  })

  it('on Debian without root or sudo: stops with the apt-get line, and warns about the full-disk test', () => {
    const plan = testPlan({
      platform: 'linux',
      hasAptGet: true,
      isRoot: false,
      canSudo: () => false,
      requirements: requirementsOn(['postgres', '/usr/bin/openssl']),
    })
    assert.ok(plan.stop?.includes('  sudo apt-get install -y redis-server chromium'))
    assert.deepEqual(plan.notes, ['not root: server/test/full-disk.test.ts will fail (it mounts a tmpfs)'])
    const withSudo = testPlan({
      platform: 'linux',
      hasAptGet: true,
      isRoot: false,
      canSudo: () => true,
      requirements: requirementsOn(['postgres', '/usr/bin/openssl']),
    })
    assert.deepEqual(withSudo.install, ['redis-server', 'chromium'])
  })

  it('on a Linux without apt-get: stops with the container command', () => {
    const plan = testPlan({
      platform: 'linux',
      hasAptGet: false,
      isRoot: true,
      requirements: requirementsOn([]),
    })
    assert.ok(plan.stop?.some((line) => line.includes(CONTAINER_COMMAND)))
    assert.ok(plan.stop?.some((line) => line.includes('Chromium: browser tests')))
  })
})
