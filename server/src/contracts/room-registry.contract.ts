import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { OwnershipClaim, RoomRegistry, ServerAddress } from '../ports/room-registry.js'
import { eventually } from './eventually.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

export interface RegistryPair {
  a: RoomRegistry
  b: RoomRegistry
  serverA: ServerAddress
  serverB: ServerAddress
  leaseMs: number
  cleanup(): Promise<void>
}

/** What every `RoomRegistry` adapter must do; `createPair` shares one backend between two servers. */
export function roomRegistryContract(
  name: string,
  createPair: (leaseMs: number) => Promise<RegistryPair>,
): void {
  describe(`RoomRegistry contract: ${name}`, () => {
    it('keeps every room name apart: slashes, case, dots, long and non-ASCII names', async () => {
      const pair = await createPair(30_000)
      const owned = TRICKY_ROOM_NAMES.filter((_, i) => i % 2 === 0)
      for (const room of owned) assert.deepEqual(await pair.a.claim(room), { owned: true, epoch: 1 }, room)
      for (const room of TRICKY_ROOM_NAMES) {
        const owner = owned.includes(room) ? { ...pair.serverA, epoch: 1 } : null
        assert.deepEqual(await pair.b.ownerOf(room), owner, room)
      }
      await pair.cleanup()
    })

    it('gives a room one owner: of two servers claiming together one wins, at epoch 1; the other is told who', async () => {
      const pair = await createPair(30_000)
      const room = uniqueRoom('own')
      assert.equal(await pair.a.ownerOf(room), null)
      const claims = await Promise.all([pair.a.claim(room), pair.b.claim(room)])
      const won = claims.filter((claim) => claim.owned)
      assert.deepEqual(won, [{ owned: true, epoch: 1 }], 'exactly one wins')
      const [winner, loser, server] = claims[0]?.owned
        ? [pair.a, pair.b, pair.serverA]
        : [pair.b, pair.a, pair.serverB]
      const owner = { ...server, epoch: 1 }
      assert.deepEqual(await pair.a.ownerOf(room), owner)
      assert.deepEqual(await pair.b.ownerOf(room), owner)
      assert.deepEqual(
        await winner.claim(room),
        { owned: true, epoch: 1 },
        'claiming what it owns changes nothing',
      )
      assert.deepEqual(await loser.claim(room), { owned: false, owner } satisfies OwnershipClaim)
      assert.equal(await pair.b.ownerOf(uniqueRoom('own')), null)
      await pair.cleanup()
    })

    it('lets the next server take a released room at once, at the next epoch; a stale release changes nothing', async () => {
      const pair = await createPair(30_000)
      const room = uniqueRoom('own')
      assert.deepEqual(await pair.a.claim(room), { owned: true, epoch: 1 })
      await pair.b.release(room, 1) // not b's: nothing
      assert.deepEqual(await pair.b.ownerOf(room), { ...pair.serverA, epoch: 1 })
      await pair.a.release(room, 1)
      assert.equal(await pair.b.ownerOf(room), null)
      assert.deepEqual(await pair.b.claim(room), { owned: true, epoch: 2 })
      await pair.a.release(room, 1) // its old epoch: nothing
      assert.deepEqual(await pair.a.claim(room), { owned: false, owner: { ...pair.serverB, epoch: 2 } })
      await pair.cleanup()
    })

    it('keeps a running owner’s rooms; takes a stopped one’s at the next epoch once its lease lapses, at once when it is known gone', async () => {
      const leaseMs = 300
      const pair = await createPair(leaseMs)
      const [kept, lapsed, gone] = [uniqueRoom('own'), uniqueRoom('own'), uniqueRoom('own')]
      for (const room of [kept, lapsed, gone])
        assert.deepEqual(await pair.a.claim(room), { owned: true, epoch: 1 })
      const claimedAt = Date.now()
      await eventually(() => Date.now() - claimedAt > leaseMs * 2, 'two lease periods pass', 5_000)
      const owner = { ...pair.serverA, epoch: 1 }
      assert.deepEqual(await pair.b.claim(kept), { owned: false, owner }, 'its server renews its lease')
      assert.deepEqual(
        await pair.b.claim(kept, { ...owner, epoch: 0 }),
        { owned: false, owner },
        'a stale epoch is no proof',
      )
      await pair.a.close() // like a crash: no release, no more heartbeats
      assert.deepEqual(await pair.b.claim(gone, owner), { owned: true, epoch: 2 }, 'known gone: at once')
      let claim = await pair.b.claim(lapsed)
      await eventually(
        async () => {
          claim = await pair.b.claim(lapsed)
          return claim.owned
        },
        'the lease runs out',
        leaseMs * 3,
      )
      assert.deepEqual(claim, { owned: true, epoch: 2 }, 'taken once the stopped server’s lease ran out')
      assert.deepEqual(await pair.b.ownerOf(lapsed), { ...pair.serverB, epoch: 2 })
      await pair.cleanup()
    })
  })
}
