import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  decodeMetadataNotification,
  encodeMetadataNotification,
  internalRoomPath,
  internalStatePath,
  parseInternalPath,
} from '@symphony/client/wire'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

describe('the wire contract', () => {
  it('reads back every room from its internal-endpoint paths, whatever its characters', () => {
    for (const room of ['board-1', 'team/doc 42', 'café-ü', '100%', 'a?b#c', 'state', '💡']) {
      assert.deepEqual(parseInternalPath(internalStatePath(room)), { room, state: true }, room)
      assert.deepEqual(parseInternalPath(internalRoomPath(room)), { room, state: false }, room)
    }
  })

  it('names nothing for paths outside the internal rooms', () => {
    for (const path of [
      '/internal/rooms/',
      '/internal/rooms//state',
      '/internal/rooms/a/b',
      '/rooms/a',
      '/',
    ]) {
      assert.equal(parseInternalPath(path), null, path)
    }
  })

  it('keeps a metadata notification under the NOTIFY limit by naming no rooms, never by cutting JSON', () => {
    const few = encodeMetadataNotification({ server: 's1', rooms: ['a', 'b'] })
    assert.deepEqual(decodeMetadataNotification(few), { server: 's1', rooms: ['a', 'b'] })
    const rooms = Array.from({ length: 2_000 }, (_, i) => `room-${i}`)
    const many = encodeMetadataNotification({ server: 's1', rooms })
    assert.ok(Buffer.byteLength(many) < 8_000, 'Postgres refuses payloads of 8000 bytes')
    assert.deepEqual(decodeMetadataNotification(many), { server: 's1', rooms: null })
    const samples = encodeMetadataNotification({ server: 's1', rooms: [], samples: 3 })
    assert.deepEqual(decodeMetadataNotification(samples), { server: 's1', rooms: [], samples: 3 })
  })

  it('ignores notifications that are not ours', () => {
    for (const payload of [undefined, '', 'not json', 'null', '{}', '{"server":1}']) {
      assert.equal(decodeMetadataNotification(payload), null, String(payload))
    }
  })

  it('is the only place the contract is spelled out: no package keeps its own copy', () => {
    // Fingerprints of the contract's values; each may appear only in the wire module.
    const fingerprints = [
      /'symphony_metadata'/,
      /\/internal\/rooms\//,
      /'symphony-token\./,
      /\.close\(\s*1\d{3}\b/,
    ]
    const sources = ['server/src', 'dashboard-server/src', 'loadtest/src', 'client-lib']
      .flatMap((folder) => sourceFiles(join(ROOT, folder)))
      .filter((file) => !/(^|\/)(wire|test)\//.test(relative(ROOT, file)))
    assert.ok(sources.length > 100, 'found the sources')
    const copies = sources.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      return fingerprints.filter((pattern) => pattern.test(text)).map((p) => `${relative(ROOT, file)}: ${p}`)
    })
    assert.deepEqual(copies, [])
  })
})

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'dist') return []
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })
}
