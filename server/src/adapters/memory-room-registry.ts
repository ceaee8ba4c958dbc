import type { PeerServer, RoomRegistry } from '../ports/room-registry.js'
import { LeaseHeartbeat, type LeaseOptions } from './lease-heartbeat.js'

interface Lease extends PeerServer {
  expiresAt: number
}

/** The in-process table behind `MemoryRoomRegistry`: room → serverId → lease. */
export class MemoryRegistryTable {
  readonly leases = new Map<string, Map<string, Lease>>()
}

/** Embedded `RoomRegistry`: leases in a table shared by the servers of one process. */
export class MemoryRoomRegistry implements RoomRegistry {
  readonly #heartbeat: LeaseHeartbeat

  constructor(
    private readonly self: PeerServer,
    private readonly options: LeaseOptions,
    private readonly table: MemoryRegistryTable = new MemoryRegistryTable(),
  ) {
    this.#heartbeat = new LeaseHeartbeat(
      options,
      async (rooms) => {
        for (const room of rooms) this.#writeLease(room)
      },
      () => {}, // writing to a Map cannot fail
    )
  }

  async register(room: string): Promise<void> {
    this.#writeLease(room)
    this.#heartbeat.add(room)
  }

  async deregister(room: string): Promise<void> {
    this.#heartbeat.delete(room)
    const servers = this.table.leases.get(room)
    servers?.delete(this.self.serverId)
    if (servers?.size === 0) this.table.leases.delete(room)
  }

  async peersFor(room: string): Promise<PeerServer[]> {
    const now = this.options.now()
    const peers: PeerServer[] = []
    for (const lease of this.table.leases.get(room)?.values() ?? []) {
      if (lease.serverId !== this.self.serverId && lease.expiresAt > now) {
        peers.push({ serverId: lease.serverId, internalAddress: lease.internalAddress })
      }
    }
    return peers
  }

  async close(): Promise<void> {
    this.#heartbeat.stop()
  }

  #writeLease(room: string): void {
    let servers = this.table.leases.get(room)
    if (!servers) {
      servers = new Map()
      this.table.leases.set(room, servers)
    }
    servers.set(this.self.serverId, { ...this.self, expiresAt: this.options.now() + this.options.leaseMs })
  }
}
