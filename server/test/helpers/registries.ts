import { type MemoryRegistryTable, MemoryRoomRegistry } from '../../src/adapters/memory-room-registry.js'
import type { RoomRegistry } from '../../src/ports/room-registry.js'

/**
 * A memory registry (server `serverId`; its own table unless given one), each call passed through
 * `around` first: a test delays, fails, hangs or counts the calls it names and lets the others through.
 */
export function registryAround(
  serverId: string,
  around: (call: keyof RoomRegistry, pass: () => Promise<unknown>) => Promise<unknown>,
  table?: MemoryRegistryTable,
): RoomRegistry {
  const inner = new MemoryRoomRegistry(
    { serverId, internalAddress: '127.0.0.1:1' },
    { leaseMs: 30_000, now: Date.now },
    table,
  )
  const wrap =
    <A extends unknown[], R>(call: keyof RoomRegistry, method: (...args: A) => Promise<R>) =>
    (...args: A) =>
      around(call, () => method(...args)) as Promise<R>
  return {
    claim: wrap('claim', (room: string, gone?: Parameters<RoomRegistry['claim']>[1]) =>
      inner.claim(room, gone),
    ),
    ownerOf: wrap('ownerOf', (room: string) => inner.ownerOf(room)),
    release: wrap('release', (room: string, epoch: number) => inner.release(room, epoch)),
    onLeaseLapsed: (listener) => inner.onLeaseLapsed(listener),
    epochsOutliveProcess: true,
    close: () => inner.close(),
  }
}
