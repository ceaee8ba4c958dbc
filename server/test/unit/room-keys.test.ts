import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { isValidRoomName } from '@symphony/client/wire'
import { FileSnapshotStore } from '../../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../../src/adapters/file-update-journal.js'
import { roomFileName, roomKey } from '../../src/adapters/room-keys.js'
import { TRICKY_ROOM_NAMES } from '../helpers/tricky-room-names.js'

/** Random valid room names: any code point but control characters and surrogates, 1–128 of them. */
function randomNames(count: number): string[] {
  const pools = [
    () => 0x20 + Math.floor(Math.random() * 0x5f), // printable ASCII
    () => 0xa0 + Math.floor(Math.random() * 0x2000), // Latin, Greek, Cyrillic…
    () => 0x1f600 + Math.floor(Math.random() * 0x50), // emoji (4 bytes)
  ]
  const names = new Set<string>()
  while (names.size < count) {
    const length = 1 + Math.floor(Math.random() * (Math.random() < 0.2 ? 128 : 6))
    let name = ''
    for (let i = 0; i < length; i++) {
      const pool = pools[Math.floor(Math.random() * pools.length)] ?? (() => 0x41)
      name += String.fromCodePoint(pool())
    }
    if (isValidRoomName(name)) names.add(name)
  }
  return [...names, ...TRICKY_ROOM_NAMES]
}

describe('room keys', () => {
  const names = randomNames(20_000)

  it('file names: one per room even where the file system folds case, safe characters, under 255 bytes', () => {
    const folded = new Map<string, string>()
    for (const name of names) {
      const file = roomFileName(name)
      assert.match(file, /^(?:[a-z0-9_-]|%[0-9A-F]{2})(?:[a-z0-9_.-]|%[0-9A-F]{2})*(?:~[0-9a-f]{64})?$/, name)
      assert.match(file, /^(?!\.)/, 'never a dot first: no "..", no hidden files')
      assert.ok(
        Buffer.byteLength(`${file}.journal.lock`) < 200,
        `${file.length} bytes for ${name.length} chars`,
      )
      const other = folded.get(file.toLowerCase())
      assert.ok(other === undefined || other === name, `${JSON.stringify(name)} and ${JSON.stringify(other)}`)
      folded.set(file.toLowerCase(), name)
    }
    assert.equal(roomFileName('team/Doc 42'), 'team%2F%44oc%2042')
    assert.equal(roomFileName('..'), '%2E.')
  })

  it('file names: never a Windows device name, whatever the extension', () => {
    for (const room of ['con', 'nul.txt', 'aux', 'prn.', 'com1', 'lpt9.x', 'CON', 'Nul']) {
      assert.doesNotMatch(roomFileName(room), /^(?:con|prn|aux|nul|com\d|lpt\d)(?:\.|$)/i, room)
    }
    assert.equal(roomFileName('con'), '%63on')
    assert.equal(roomFileName('console'), 'console')
  })

  it('S3 and Redis keys: one per room, names of the old alphabet unchanged, no separators or tags', () => {
    const seen = new Map<string, string>()
    for (const name of names) {
      const key = roomKey(name)
      assert.doesNotMatch(key, /[/{}\\ *?[\]]/u, name)
      assert.ok(Buffer.byteLength(key) <= 512 * 3)
      const other = seen.get(key)
      assert.ok(other === undefined || other === name, `${JSON.stringify(name)} and ${JSON.stringify(other)}`)
      seen.set(key, name)
    }
    for (const legacy of ['board-1', 'Team_7:Board.2', 'a~b']) assert.equal(roomKey(legacy), legacy)
    assert.equal(roomKey('team/doc 42%'), 'team%2Fdoc%2042%25')
    assert.equal(roomKey('café'), 'café')
  })
})

describe('file stores keep rooms inside their folder', () => {
  it('writes one file per tricky name, all in the folder, none hidden', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'rooms-'))
    const store = new FileSnapshotStore(folder)
    for (const room of TRICKY_ROOM_NAMES) await store.save(room, new Uint8Array([1]), null)
    const files = readdirSync(folder)
    assert.equal(files.length, TRICKY_ROOM_NAMES.length)
    assert.ok(files.every((file) => file.endsWith('.ybin') && !file.startsWith('.')))
    assert.deepEqual(
      readdirSync(join(folder, '..')).filter((f) => f.endsWith('.ybin')),
      [],
      'nothing above it',
    )
  })

  it('finds the snapshots and journals earlier versions wrote as <room>.ybin and <room>.journal', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'legacy-'))
    const journalFolder = join(folder, 'journal')
    const old = new FileUpdateJournal(journalFolder)
    await old.append('probe', new Uint8Array([0]))
    await old.close()
    // An older server's files: the same formats, named by the room as it is.
    writeFileSync(join(folder, 'Board-1.ybin'), new Uint8Array([4, 2]))
    writeFileSync(join(journalFolder, 'Board-1.journal'), readFileSync(join(journalFolder, 'probe.journal')))

    const store = new FileSnapshotStore(folder)
    const loaded = await store.load('Board-1')
    assert.deepEqual(loaded?.state, new Uint8Array([4, 2]))
    const version = await store.save('Board-1', new Uint8Array([5]), loaded?.version ?? null)
    assert.deepEqual(await store.load('Board-1'), { state: new Uint8Array([5]), version, generation: 0 })
    assert.ok(!readdirSync(folder).includes('Board-1.ybin'), 'moved to its new name')
    const journal = new FileUpdateJournal(journalFolder)
    assert.deepEqual((await journal.read('Board-1')).updates, [new Uint8Array([0])])
    assert.ok(!readdirSync(journalFolder).includes('Board-1.journal'))
    await journal.close()
  })

  it('never takes another room’s hashed file for the legacy file of a name that spells it', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'hashed-'))
    const store = new FileSnapshotStore(folder)
    const long = `${'a'.repeat(63)}A${'é'.repeat(64)}` // its file: 63 a's, "~" and a SHA-256
    await store.save(long, new Uint8Array([7]), null)
    const spelled = roomFileName(long) // a valid name, and of the old alphabet too
    assert.equal(spelled.length, 128)
    assert.equal(await store.load(spelled), null)
    assert.deepEqual((await store.load(long))?.state, new Uint8Array([7]))
  })
})
