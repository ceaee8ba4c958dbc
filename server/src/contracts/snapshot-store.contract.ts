import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SnapshotConflictError, SnapshotVersionNotFoundError, StaleEpochError } from '../errors.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import { putSnapshot, storedState } from './stored-snapshots.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

const isConflict = (error: unknown) => error instanceof SnapshotConflictError
const isStale = (error: unknown) => error instanceof StaleEpochError && error.code === 'STALE_EPOCH'
/** Rounds of the races between writers: enough to catch a store whose writes are not atomic. */
const ROUNDS = 25
const isNotFound = (error: unknown) =>
  error instanceof SnapshotVersionNotFoundError && error.code === 'VERSION_NOT_FOUND'

/** Every version of the room, newest first, read `limit` at a time through the cursors. */
async function allVersions(store: SnapshotStore, room: string, limit: number) {
  const all = []
  let cursor: string | null = null
  for (let pages = 0; pages < 50; pages++) {
    const page: Awaited<ReturnType<SnapshotStore['listVersions']>> = await store.listVersions(room, {
      limit,
      cursor,
    })
    assert.ok(page.versions.length <= limit, 'a page holds at most limit versions')
    all.push(...page.versions)
    if (page.nextCursor === null) return all
    cursor = page.nextCursor
  }
  throw new Error('the cursors never end')
}

/** What every `SnapshotStore` adapter must do. */
export function snapshotStoreContract(name: string, createStore: () => Promise<SnapshotStore>): void {
  describe(`SnapshotStore contract: ${name}`, () => {
    it('returns null for a room never saved, and the saved bytes and version after a save', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      assert.equal(await store.load(room), null)
      const first = await store.save(room, new Uint8Array([1, 2, 3]), null)
      assert.deepEqual(await store.load(room), {
        state: new Uint8Array([1, 2, 3]),
        version: first,
        generation: 0,
      })
      const second = await store.save(room, new Uint8Array([4]), first)
      assert.notEqual(second, first, 'each save has a version of its own')
      assert.deepEqual(await store.load(room), { state: new Uint8Array([4]), version: second, generation: 0 })
      await store.close()
    })

    it('stores the epoch of the owner that saved, and refuses an earlier owner once a later one saved', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const first = await store.save(room, new Uint8Array([1]), null, 0, 3)
      assert.equal((await store.head(room))?.epoch, 3)
      assert.equal((await store.load(room))?.epoch, 3)
      const [saved] = (await store.listVersions(room, { limit: 1 })).versions
      assert.equal((await store.readVersion(room, saved?.id ?? '')).epoch, 3, 'a saved version too')
      const second = await store.save(room, new Uint8Array([2]), first, 0, 4)
      await assert.rejects(store.save(room, new Uint8Array([9]), first, 0, 3), isStale, 'the earlier owner')
      await assert.rejects(
        store.save(room, new Uint8Array([9]), first),
        isConflict,
        'a save without an epoch',
      )
      // An earlier owner that had not missed a save writes (its journal trims are what is fenced);
      // the later owner's next save is then refused for its version only: it is not the stale one.
      const third = await store.save(room, new Uint8Array([3]), second, 0, 2)
      await assert.rejects(store.save(room, new Uint8Array([9]), second, 0, 5), isConflict, 'the later owner')
      assert.deepEqual(await store.load(room), {
        state: new Uint8Array([3]),
        version: third,
        generation: 0,
        epoch: 2,
      })
      await store.delete(room, 0)
      assert.equal((await store.head(room))?.epoch, undefined, 'a tombstone carries no epoch')
      await store.close()
    })

    it('refuses a save over a version other than the expected one, and keeps what is stored', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const first = await store.save(room, new Uint8Array([1]), null)
      await assert.rejects(store.save(room, new Uint8Array([9]), null), isConflict, 'one is stored already')
      const second = await store.save(room, new Uint8Array([2]), first)
      await assert.rejects(store.save(room, new Uint8Array([9]), first), isConflict, 'a stale version')
      await assert.rejects(
        store.save(uniqueRoom('snap'), new Uint8Array([9]), second),
        isConflict,
        'none stored',
      )
      assert.deepEqual(await store.load(room), { state: new Uint8Array([2]), version: second, generation: 0 })
      await store.close()
    })

    it('keeps every room name apart: slashes, case, dots, long and non-ASCII names', async () => {
      const store = await createStore()
      const versions = new Map<string, string>()
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) {
        versions.set(room, await store.save(room, new Uint8Array([i, 7]), null))
      }
      for (const [i, room] of TRICKY_ROOM_NAMES.entries()) {
        assert.deepEqual(
          await store.load(room),
          { state: new Uint8Array([i, 7]), version: versions.get(room), generation: 0 },
          room,
        )
      }
      await store.close()
    })

    it('deletes a room by leaving a lasting tombstone: its incarnation is gone, the next saves over it', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const first = await store.save(room, new Uint8Array([1]), null)
      await store.delete(room, 0)
      const tombstone = await store.load(room)
      assert.deepEqual(
        { ...tombstone, version: '' },
        { state: new Uint8Array(), version: '', generation: 0, deleted: true },
      )
      assert.deepEqual(await store.head(room), { version: tombstone?.version, generation: 0, deleted: true })
      await assert.rejects(store.save(room, new Uint8Array([9]), first), isConflict, 'a saver that missed it')
      await assert.rejects(store.save(room, new Uint8Array([9]), null), isConflict, 'one that never saved')
      const next = await store.save(room, new Uint8Array([2]), tombstone?.version ?? null, 1)
      assert.deepEqual(await store.load(room), { state: new Uint8Array([2]), version: next, generation: 1 })
      assert.deepEqual(await store.head(room), { version: next, generation: 1 })
      await store.delete(room, 0) // a late deletion of the earlier incarnation changes nothing
      assert.deepEqual(await store.head(room), { version: next, generation: 1 })
      const never = uniqueRoom('snap')
      await store.delete(never, 0) // never saved: it still leaves its tombstone
      assert.equal((await store.head(never))?.deleted, true)
      assert.equal(await store.head(uniqueRoom('snap')), null)
      await store.close()
    })

    it('never gives two incarnations, or a tombstone and a snapshot, the same version (S3 tags are hashes of the bytes)', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const first = await store.save(room, new Uint8Array([1]), null)
      await store.delete(room, 0)
      const tombstone0 = (await store.head(room))?.version ?? null
      const second = await store.save(room, new Uint8Array([1]), tombstone0, 1) // the same content again
      assert.notEqual(second, first)
      await store.delete(room, 1)
      const tombstone1 = (await store.head(room))?.version
      assert.notEqual(tombstone1, tombstone0)
      for (const stale of [first, tombstone0, second]) {
        await assert.rejects(store.save(room, new Uint8Array([9]), stale, 1), isConflict, `over ${stale}`)
      }
      assert.equal((await store.head(room))?.deleted, true)
      await store.close()
    })

    it('lets exactly one of two savers expecting the same version win, every time', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      // Many rounds of a few kilobytes: a store that checks the version and then writes, with
      // nothing between two requests, lets both through now and then (an emulator did, 1 in 36).
      const state = (first: number) => new Uint8Array(4096).fill(first)
      let version: string | null = null
      for (let round = 0; round < ROUNDS; round++) {
        const base = await store.save(room, state(0), version)
        const outcomes = await Promise.allSettled([
          store.save(room, state(1), base),
          store.save(room, state(2), base),
        ])
        const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i + 1] : []))
        assert.equal(won.length, 1, `one save wins (round ${round})`)
        const lost = outcomes.find((o) => o.status === 'rejected')
        assert.ok(lost && isConflict(lost.reason), 'the other is told it conflicted')
        assert.deepEqual(await storedState(store, room), state(won[0] as number))
        version = (await store.head(room))?.version ?? null
      }
      await store.close()
    })

    it('keeps a deletion that races a save over the same version: the tombstone stays', async () => {
      const store = await createStore()
      for (let round = 0; round < ROUNDS; round++) {
        const room = uniqueRoom('snap')
        const base = await store.save(room, new Uint8Array(4096).fill(1), null)
        const [saved] = await Promise.allSettled([
          store.save(room, new Uint8Array(4096).fill(2), base),
          store.delete(room, 0),
        ])
        assert.ok(saved.status === 'fulfilled' || isConflict(saved.reason), 'the save won or was refused')
        assert.equal(
          (await store.head(room))?.deleted,
          true,
          `the tombstone is what is stored (round ${round})`,
        )
      }
      await store.close()
    })

    it('keeps every legal room name apart, including dots and colons', async () => {
      const store = await createStore()
      const suffix = uniqueRoom('')
      const names = ['.', '..', '...', '~', 'a:b', 'a-b', 'a_b', 'A.b', 'a.B'].map((n) => `${n}${suffix}`)
      names.push('.', '..', 'x'.repeat(128))
      await Promise.all(names.map((room, i) => putSnapshot(store, room, new Uint8Array([i]))))
      for (const [i, room] of names.entries())
        assert.deepEqual(await storedState(store, room), new Uint8Array([i]), room)
      await store.close()
    })

    it('stores a large state intact, one whole version under concurrent saves', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 253)
      await Promise.allSettled([store.save(room, new Uint8Array([0]), null), store.save(room, big, null)])
      const loaded = await storedState(store, room)
      assert.ok(
        loaded && (loaded.length === 1 || loaded.length === big.length),
        'one whole version, never a mix',
      )
      await putSnapshot(store, room, big)
      assert.deepEqual(await storedState(store, room), big)
      await store.close()
    })

    it('lists its saved versions newest first, each readable as it was saved', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      assert.deepEqual(await store.listVersions(room, { limit: 10 }), { versions: [], nextCursor: null })
      const states = [new Uint8Array([1]), new Uint8Array([2, 2]), new Uint8Array([3, 3, 3])]
      let version: string | null = null
      for (const state of states) version = await store.save(room, state, version)
      const { versions, nextCursor } = await store.listVersions(room, { limit: 10 })
      assert.equal(nextCursor, null)
      assert.equal(versions.length, 3)
      assert.deepEqual(
        versions.map((v) => v.bytes),
        [3, 2, 1],
        'newest first, each with its size',
      )
      assert.equal(new Set(versions.map((v) => v.id)).size, 3, 'each its own id')
      for (const [i, v] of versions.entries()) {
        assert.match(v.id, /^[A-Za-z0-9_.-]{1,256}$/)
        assert.ok(v.savedAt instanceof Date && !Number.isNaN(v.savedAt.getTime()))
        if (i > 0)
          assert.ok(v.savedAt <= (versions[i - 1] as { savedAt: Date }).savedAt, 'older ones saved no later')
        assert.equal(v.deleted, undefined)
        const read = await store.readVersion(room, v.id)
        assert.deepEqual(read, { state: states[2 - i], version: v.id, generation: 0 })
      }
      assert.deepEqual(
        await store.load(room),
        { state: states[2], version, generation: 0 },
        'the current one unchanged',
      )
      await store.close()
    })

    it('pages through its versions with cursors, and checks the limit', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      let version: string | null = null
      for (let i = 1; i <= 5; i++) version = await store.save(room, new Uint8Array(i), version)
      const whole = await allVersions(store, room, 10)
      assert.deepEqual(
        whole.map((v) => v.bytes),
        [5, 4, 3, 2, 1],
      )
      for (const limit of [1, 2, 3]) {
        assert.deepEqual(
          (await allVersions(store, room, limit)).map((v) => v.id),
          whole.map((v) => v.id),
          `pages of ${limit}`,
        )
      }
      const first = await store.listVersions(room, { limit: 2 })
      assert.equal(first.versions.length, 2)
      assert.notEqual(first.nextCursor, null)
      for (const limit of [0, -1, 1.5, 1001, Number.NaN]) {
        await assert.rejects(store.listVersions(room, { limit }), RangeError, `limit ${limit}`)
      }
      await assert.rejects(store.listVersions(room, { limit: 1, cursor: 'no such cursor!' }), isNotFound)
      await store.close()
    })

    it('keeps the versions of a deleted incarnation, its tombstone among them', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const first = await store.save(room, new Uint8Array([1, 1]), null)
      await store.delete(room, 0)
      const tombstone = (await store.head(room))?.version ?? null
      await store.save(room, new Uint8Array([2]), tombstone, 1)
      const versions = await allVersions(store, room, 10)
      assert.equal(versions.length, 3)
      assert.deepEqual(
        versions.map((v) => v.deleted ?? false),
        [false, true, false],
        'the tombstone is marked',
      )
      const [newest, deletion, oldest] = await Promise.all(versions.map((v) => store.readVersion(room, v.id)))
      assert.deepEqual(newest && { ...newest, version: '' }, {
        state: new Uint8Array([2]),
        version: '',
        generation: 1,
      })
      assert.deepEqual(deletion && { ...deletion, version: '' }, {
        state: new Uint8Array(),
        version: '',
        generation: 0,
        deleted: true,
      })
      assert.deepEqual(oldest && { ...oldest, version: '' }, {
        state: new Uint8Array([1, 1]),
        version: '',
        generation: 0,
      })
      assert.notEqual(first, null)
      await store.close()
    })

    it('refuses an unknown version id, or another room’s, with VERSION_NOT_FOUND', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const other = `${room}x` // a name that starts with the first: its versions stay its own
      await store.save(room, new Uint8Array([1]), null)
      await store.save(other, new Uint8Array([2]), null)
      const [mine] = (await store.listVersions(room, { limit: 10 })).versions
      const theirs = (await store.listVersions(other, { limit: 10 })).versions
      assert.equal(theirs.length, 1, 'only its own versions')
      assert.ok(mine && theirs[0])
      for (const id of ['nope', '../x', '', theirs[0].id === mine.id ? 'x' : theirs[0].id, 'A'.repeat(300)]) {
        await assert.rejects(store.readVersion(room, id), isNotFound, JSON.stringify(id))
      }
      await assert.rejects(store.readVersion(uniqueRoom('snap'), mine.id), isNotFound, 'a room never saved')
      await store.close()
    })
  })
}
