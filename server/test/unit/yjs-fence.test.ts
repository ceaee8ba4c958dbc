import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { YJS_TESTED_VERSION, yjsVersionCheck } from '../../src/protocol/yjs-internals.js'

const SERVER = fileURLToPath(new URL('../../', import.meta.url))
const FENCE = 'src/protocol/yjs-internals.ts'
/** Yjs past its documented API: the struct store, a type's private fields, store-level helpers. */
const INTERNALS =
  /\bdoc\.store\b|\._(start|map|item|transactionCleanups)\b|\b(getState|findIndexSS|findRootTypeKey|createDeleteSetFromStructStore)\(|\bpending(Structs|Ds)\b/

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

describe('the Yjs fence', () => {
  it('keeps every read of Yjs internals in one module', () => {
    const outside = sources(join(SERVER, 'src'))
      .map((path) => relative(SERVER, path))
      .filter((path) => path !== FENCE)
      .flatMap((path) =>
        readFileSync(join(SERVER, path), 'utf8')
          .split('\n')
          .flatMap((line, index) => (INTERNALS.test(line) ? [`${path}:${index + 1}: ${line.trim()}`] : [])),
      )
    assert.deepEqual(outside, [], `use ${FENCE} instead`)
  })

  it('pins yjs to the release the fence was tested with, and that release is installed', () => {
    const { dependencies } = JSON.parse(readFileSync(join(SERVER, 'package.json'), 'utf8'))
    assert.equal(dependencies.yjs, YJS_TESTED_VERSION, 'an exact pin, no range')
    assert.deepEqual(yjsVersionCheck(), {
      installed: YJS_TESTED_VERSION,
      tested: YJS_TESTED_VERSION,
      matches: true,
    })
  })
})
