import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'

const rootPackage = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))

describe('the Node.js runtime', () => {
  it('the tests run on the Node pinned in package.json devEngines, whatever the machine has', () => {
    assert.equal(rootPackage.devEngines.runtime.name, 'node')
    assert.equal(process.versions.node, rootPackage.devEngines.runtime.version)
  })

  it('the pinned Node is an even (LTS) major that engines allows', () => {
    const major = Number(rootPackage.devEngines.runtime.version.split('.')[0])
    assert.equal(major % 2, 0)
    assert.equal(rootPackage.engines.node, `>=${major}`)
  })
})
