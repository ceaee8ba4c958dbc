import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { SnapshotStore } from '../../src/ports/snapshot-store.js'
import { uniqueRoom } from '../helpers/clients.js'

/** What every `SnapshotStore` adapter must do. */
export function snapshotStoreContract(name: string, createStore: () => Promise<SnapshotStore>): void {
  describe(`SnapshotStore contract: ${name}`, () => {
    it('returns null for a room never saved, and the saved bytes after a save', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      assert.equal(await store.load(room), null)
      await store.save(room, new Uint8Array([1, 2, 3]))
      assert.deepEqual(await store.load(room), new Uint8Array([1, 2, 3]))
      await store.save(room, new Uint8Array([4]))
      assert.deepEqual(await store.load(room), new Uint8Array([4]), 'a save replaces the previous one')
      await store.close()
    })

    it('keeps every legal room name apart, including dots and colons', async () => {
      const store = await createStore()
      const suffix = uniqueRoom('')
      const names = ['.', '..', '...', '~', 'a:b', 'a-b', 'a_b', 'A.b', 'a.B'].map((n) => `${n}${suffix}`)
      names.push('.', '..', 'x'.repeat(128))
      await Promise.all(names.map((room, i) => store.save(room, new Uint8Array([i]))))
      for (const [i, room] of names.entries())
        assert.deepEqual(await store.load(room), new Uint8Array([i]), room)
      await store.close()
    })

    it('stores a large state intact under concurrent saves of one room', async () => {
      const store = await createStore()
      const room = uniqueRoom('snap')
      const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 253)
      await Promise.all([store.save(room, new Uint8Array([0])), store.save(room, big)])
      const loaded = await store.load(room)
      assert.ok(
        loaded && (loaded.length === 1 || loaded.length === big.length),
        'one whole version, never a mix',
      )
      await store.save(room, big)
      assert.deepEqual(await store.load(room), big)
      await store.close()
    })
  })
}
