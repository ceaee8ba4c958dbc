import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  accessCheckPath,
  apiRoomPath,
  decodeMetadataNotification,
  encodeMetadataNotification,
  internalRoomPath,
  parseAccessCheckPath,
  parseApiRoomPath,
  parseInternalRoomPath,
} from '@symphony/client/wire'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

describe('the wire contract', () => {
  it('reads back every room from the paths that name it, whatever its characters', () => {
    const rooms = ['board-1', 'team/doc 42', 'café-ü', '100%', 'a?b#c', 'state', 'document', 'access', '💡']
    for (const room of rooms) {
      assert.deepEqual(parseInternalRoomPath(internalRoomPath(room, 'state')), { room, part: 'state' }, room)
      assert.deepEqual(parseInternalRoomPath(internalRoomPath(room)), { room, part: '' }, room)
      assert.deepEqual(parseApiRoomPath(apiRoomPath(room, 'document')), { room, part: 'document' }, room)
      assert.deepEqual(parseApiRoomPath(apiRoomPath(room, 'update')), { room, part: 'update' }, room)
      assert.deepEqual(parseApiRoomPath(apiRoomPath(room)), { room, part: '' }, room)
      assert.deepEqual(parseAccessCheckPath(accessCheckPath(room)), { room, part: '' }, room)
    }
  })

  it('names nothing for paths that are not room paths of their kind', () => {
    for (const path of ['/internal/rooms/', '/internal/rooms/a/b', '/rooms/a', '/']) {
      assert.equal(parseInternalRoomPath(path), undefined, path)
    }
    for (const path of ['/api/v1/rooms/', '/api/v1/rooms/a/state', '/api/v1/rooms/a/b/c']) {
      assert.equal(parseApiRoomPath(path), undefined, path)
    }
    for (const path of ['/rooms/access', '/rooms/a/b/access', '/rooms/a/access/x', '/a/access']) {
      assert.equal(parseAccessCheckPath(path), undefined, path)
    }
  })

  it('hands an empty or undecodable room segment on, for the server to refuse as a bad name', () => {
    assert.deepEqual(parseAccessCheckPath('/rooms//access'), { room: '', part: '' })
    assert.deepEqual(parseApiRoomPath('/api/v1/rooms//update'), { room: '', part: 'update' })
    assert.deepEqual(parseInternalRoomPath('/internal/rooms//state'), { room: '', part: 'state' })
    assert.deepEqual(parseApiRoomPath('/api/v1/rooms/%ED%A0%80'), { room: null, part: '' })
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
      /['`]\/api\/v1\/rooms\/['`$]/,
      /\/rooms\/\$\{/,
      /'symphony-token\./,
      /\bclose\(\s*(code(: number)?\s*=\s*)?[14]\d{3}\b/,
      /, 10\d{2}, reason\)/,
      /['"]syncStatus['"]/,
      /\\p\{Cc\}/,
    ]
    const sources = [
      'server/src',
      'server/demo',
      'server/demo-react',
      'dashboard-server/src',
      'loadtest/src',
      'client-lib',
      'infra/lib',
      'scripts',
    ]
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
    return /\.(tsx?|mjs)$/.test(entry.name) ? [path] : []
  })
}
