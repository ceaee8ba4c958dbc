import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { PeerServer, RoomRegistry } from '../ports/room-registry.js'
import { eventually } from './eventually.js'
import { TRICKY_ROOM_NAMES } from './tricky-room-names.js'
import { uniqueRoom } from './unique-room.js'

export interface RegistryPair {
  a: RoomRegistry
  b: RoomRegistry
  serverA: PeerServer
  serverB: PeerServer
  leaseMs: number
  cleanup(): Promise<void>
}

/** What every `RoomRegistry` adapter must do; `createPair` shares one backend between two servers. */
export function roomRegistryContract(
  name: string,
  createPair: (leaseMs: number) => Promise<RegistryPair>,
): void {
  describe(`RoomRegistry contract: ${name}`, () => {
    it('offers a registered server to its peers, never to itself, until it deregisters', async () => {
      const pair = await createPair(30_000)
      const room = uniqueRoom('reg')
      await pair.a.register(room)
      assert.deepEqual(await pair.b.peersFor(room), [pair.serverA])
      assert.deepEqual(await pair.a.peersFor(room), [])
      await pair.b.register(room)
      assert.deepEqual(await pair.a.peersFor(room), [pair.serverB])
      await pair.a.deregister(room)
      assert.deepEqual(await pair.b.peersFor(room), [])
      assert.deepEqual(await pair.b.peersFor(uniqueRoom('reg')), [])
      await pair.cleanup()
    })

    it('keeps every room name apart: slashes, case, dots, long and non-ASCII names', async () => {
      const pair = await createPair(30_000)
      const held = TRICKY_ROOM_NAMES.filter((_, i) => i % 2 === 0)
      for (const room of held) await pair.a.register(room)
      for (const room of TRICKY_ROOM_NAMES) {
        assert.deepEqual(await pair.b.peersFor(room), held.includes(room) ? [pair.serverA] : [], room)
      }
      for (const room of held) await pair.a.deregister(room)
      await pair.cleanup()
    })

    it('keeps a live server’s lease fresh and ignores the lease of one that stopped', async () => {
      const leaseMs = 300
      const pair = await createPair(leaseMs)
      const room = uniqueRoom('reg')
      await pair.a.register(room)
      const registeredAt = Date.now()
      await eventually(() => Date.now() - registeredAt > leaseMs * 2, 'two lease periods pass', 5_000)
      assert.deepEqual(await pair.b.peersFor(room), [pair.serverA], 'heartbeat refreshed the lease')
      await pair.a.close() // like a crash: no deregistration, no more heartbeats
      const stoppedAt = Date.now()
      let peers = await pair.b.peersFor(room)
      while (peers.length > 0 && Date.now() - stoppedAt < leaseMs * 3) peers = await pair.b.peersFor(room)
      assert.deepEqual(peers, [], 'the stopped server is no longer offered once its lease has run out')
      await pair.cleanup()
    })
  })
}
