import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { ownerTag } from '../src/adapters/file-owner.js'
import { FileSnapshotStore } from '../src/adapters/file-snapshot-store.js'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import { roomFilePath } from '../src/adapters/room-files.js'
import { uniqueRoom } from './helpers/clients.js'
import { startSaverProcess } from './helpers/saver-process.js'

/**
 * Far longer than any test may take: a lock or temporary file these stores remove was removed
 * because its owner is provably gone, never because it was old.
 */
const NEVER = 3_600_000
/** Takes a lock in its own process: `helpers/lock-taker-main.ts`. */
const LOCK_TAKER = new URL('./helpers/lock-taker-main.ts', import.meta.url).pathname
/** A test that would wait for the age bound instead fails here. */
const TIMEOUT = { timeout: 30_000 }

/** A store whose age bounds no test reaches: what it removes, it removed as its owner's gone. */
const openAfterCrash = (folder: string) =>
  new FileSnapshotStore(folder, { staleLockMs: NEVER, staleFileMs: NEVER })

/** A new folder, a room, and the path of the room's file there. */
function scratchRoom(name: string, extension: string) {
  const folder = mkdtempSync(join(tmpdir(), 'leftovers-'))
  const room = uniqueRoom(name)
  return { folder, room, path: roomFilePath(folder, room, extension) }
}

/** A tag of this process's shape with parts replaced: as another process's files would name it. */
function forgedTag(parts: { space?: string; boot?: string }): string {
  const [space, pid, boot, n] = ownerTag().split('-')
  return [parts.space ?? space, pid, parts.boot ?? boot, n].join('-')
}

/**
 * Files that are not a room's snapshot or its kept versions (`<room>.ybin.versions`, there once a
 * save replaced another): temporary files, locks, locks taken over.
 */
const leftovers = (folder: string) =>
  readdirSync(folder).filter((name) => !name.endsWith('.ybin') && !name.endsWith('.ybin.versions'))

describe('what a snapshot saver killed mid-save leaves', () => {
  it(
    'is swept when a store opens the folder: temporary files and locks of a process that is gone',
    TIMEOUT,
    async () => {
      const { folder, room: locked, path } = scratchRoom('locked', '.ybin')
      const busy = uniqueRoom('busy')
      const saver = await startSaverProcess(folder, locked, busy)
      await saver.kill()
      const left = leftovers(folder)
      assert.ok(left.includes(`${basename(path)}.lock`), 'the kill left a lock')
      assert.ok(
        left.some((name) => name.endsWith('.tmp')),
        'the kill left a temporary file',
      )

      const store = openAfterCrash(folder)
      const busyState = await store.load(busy) // the first use waits for the sweep
      assert.deepEqual(leftovers(folder), [])
      assert.equal(busyState?.state.length, 256 * 1024, 'the last whole save of the busy room is intact')
      await store.save(locked, new Uint8Array([7]), null)
      assert.deepEqual((await store.load(locked))?.state, new Uint8Array([7]))
      assert.deepEqual(leftovers(folder), [])
    },
  )

  it(
    'is never a lock without its holder’s tag: a taker that cannot write the tag (no space, a file size limit) leaves no lock',
    TIMEOUT,
    async (t) => {
      const { folder, room, path } = scratchRoom('untagged', '.ybin')
      const taker = spawn(process.execPath, ['--import', 'tsx', LOCK_TAKER, `${path}.lock`], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      const exited = once(taker, 'exit')
      t.after(() => taker.kill('SIGKILL'))
      const lines = createInterface({ input: taker.stdout })[Symbol.asyncIterator]()
      const said = async () => JSON.parse(String((await lines.next()).value)) as object
      assert.deepEqual(await said(), { event: 'ready' })
      execFileSync('prlimit', ['--pid', String(taker.pid), '--fsize=0']) // every write of a byte fails: EFBIG
      taker.stdin.write('take\n')
      assert.deepEqual(await said(), { event: 'failed', code: 'EFBIG' })
      assert.deepEqual(leftovers(folder), [], 'no lock, and no half-made one, while the taker lives')
      taker.kill('SIGKILL')
      await exited
      const store = openAfterCrash(folder)
      await store.save(room, new Uint8Array([7]), null)
      assert.deepEqual((await store.load(room))?.state, new Uint8Array([7]))
      assert.deepEqual(leftovers(folder), [])
    },
  )

  it(
    'is taken over at once by a save waiting on the lock of a process that died holding it',
    TIMEOUT,
    async () => {
      const { folder, room: locked, path } = scratchRoom('locked', '.ybin')
      const store = openAfterCrash(folder)
      await store.load(locked) // swept the empty folder: what follows is found by the save
      const saver = await startSaverProcess(folder, locked, uniqueRoom('busy'))
      await saver.kill()
      await store.save(locked, new Uint8Array([7]), null)
      assert.deepEqual((await store.load(locked))?.state, new Uint8Array([7]))
      assert.equal(existsSync(`${path}.lock`), false)
    },
  )

  it('is never swept, nor its lock taken, while that process lives', TIMEOUT, async () => {
    const { folder, room: locked, path } = scratchRoom('locked', '.ybin')
    const saver = await startSaverProcess(folder, locked, uniqueRoom('busy'))
    const lock = `${path}.lock`
    const store = openAfterCrash(folder)
    await store.load(locked) // swept
    assert.equal(
      readFileSync(lock, 'utf8').split('-')[1],
      String(saver.child.pid),
      'the live saver keeps its lock',
    )
    assert.ok(
      readdirSync(folder).some((name) => name.includes(`-${saver.child.pid}-`) && name.endsWith('.tmp')),
      'and its temporary file',
    )
    let saved = false
    const save = store.save(locked, new Uint8Array([7]), null).then(() => {
      saved = true
    })
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(saved, false, 'a save waits while the lock’s holder lives')
    await saver.kill()
    await save
    assert.deepEqual((await store.load(locked))?.state, new Uint8Array([7]))
  })

  it(
    'tells this process’s own files from those of an earlier process that had its pid',
    TIMEOUT,
    async () => {
      const { folder, room, path: target } = scratchRoom('pid-reused', '.ybin')
      // An earlier process with this pid (a restarted container's pid 1): another boot token.
      const earlier = forgedTag({ boot: '0123456789ab' })
      writeFileSync(`${target}.lock`, earlier)
      writeFileSync(`${target}.${earlier}.tmp`, 'half a snapshot')
      const mine = `${target}.${ownerTag()}.tmp`
      writeFileSync(mine, 'a save of this process, under way')
      const store = openAfterCrash(folder)
      await store.load(room)
      assert.deepEqual(leftovers(folder), [basename(mine)])
      writeFileSync(`${target}.lock`, earlier) // left after the sweep: the save takes it over
      await store.save(room, new Uint8Array([1]), null)
      assert.deepEqual(leftovers(folder), [basename(mine)])
    },
  )

  it('of an unknown or remote owner, is removed only past its age bound', TIMEOUT, async () => {
    const { folder, room, path: target } = scratchRoom('remote', '.ybin')
    const remote = forgedTag({ space: 'fedcba987654' }) // another host's pid space
    const fresh = [`${target}.${remote}.tmp`, `${target}.0b6c3f9e-2f4c-4a1e-9a57-5f0e9f2d1c3a.tmp`]
    const old = [`${target}.${remote}x.tmp`, `${target}.lock.${remote}.stale`]
    for (const path of [...fresh, ...old]) writeFileSync(path, 'x')
    const hourAgo = new Date(Date.now() - 3_600_000)
    for (const path of old) utimesSync(path, hourAgo, hourAgo)
    const store = new FileSnapshotStore(folder, { staleLockMs: NEVER, staleFileMs: 60_000 })
    await store.load(room)
    assert.deepEqual(leftovers(folder).sort(), fresh.map((path) => basename(path)).sort())
  })
})

describe('what a journal trim killed midway leaves', () => {
  it(
    'is swept when the journal opens: a gone process’s temporary file, never a live one’s',
    TIMEOUT,
    async () => {
      const { folder, room, path } = scratchRoom('trimmed', '.journal')
      const saver = await startSaverProcess(mkdtempSync(join(tmpdir(), 'snap-')), 'a', 'b')
      await saver.kill()
      const gone = `${path}.${saver.tag}.tmp`
      const live = `${path}.${ownerTag()}.tmp`
      const legacy = `${path}.tmp` // before owner tags: removed by age
      for (const file of [gone, live, legacy]) writeFileSync(file, 'a trim’s new file')
      const hourAgo = new Date(Date.now() - 2 * 3_600_000)
      utimesSync(legacy, hourAgo, hourAgo)
      await new FileUpdateJournal(folder).read(room)
      assert.deepEqual(readdirSync(folder), [basename(live)])
    },
  )
})
