import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SnapshotConflictError } from '../errors.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import { putSnapshot, storedState } from './stored-snapshots.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

const isConflict = (error: unknown) => error instanceof SnapshotConflictError

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

    it('lets exactly one of two savers expecting the same version win', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const base = await store.save(room, new Uint8Array([0]), null)
      const outcomes = await Promise.allSettled([
        store.save(room, new Uint8Array([1]), base),
        store.save(room, new Uint8Array([2]), base),
      ])
      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i + 1] : []))
      assert.equal(won.length, 1, 'one save wins')
      const lost = outcomes.find((o) => o.status === 'rejected')
      assert.ok(lost && isConflict(lost.reason), 'the other is told it conflicted')
      assert.deepEqual(await storedState(store, room), new Uint8Array(won))
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
  })
}
