import { randomUUID } from 'node:crypto'
import type {
  LeaseLapse,
  OwnershipClaim,
  RoomOwner,
  RoomRegistry,
  ServerAddress,
} from '../ports/room-registry.js'
import { LeaseHeartbeat, type LeaseOptions } from './lease-heartbeat.js'
import { claimStep, isLiveOwner, type OwnerRecord, type ServerLease } from './room-ownership-rules.js'

/** The in-process table behind `MemoryRoomRegistry`: the rooms' owners, the servers' leases. */
export class MemoryRegistryTable {
  readonly owners = new Map<string, OwnerRecord>()
  readonly servers = new Map<string, ServerLease>()
}

/** Embedded `RoomRegistry`: owners and leases in a table shared by the servers of one process. */
export class MemoryRoomRegistry implements RoomRegistry {
  readonly epochsOutliveProcess = false
  readonly #heartbeat: LeaseHeartbeat
  readonly #boot = randomUUID()

  constructor(
    private readonly self: ServerAddress,
    private readonly options: LeaseOptions,
    private readonly table: MemoryRegistryTable = new MemoryRegistryTable(),
  ) {
    this.#heartbeat = new LeaseHeartbeat(
      options,
      async (expiresAt) => {
        this.table.servers.set(this.self.serverId, { boot: this.#boot, expiresAt })
      },
      () => {}, // writing to a Map cannot fail
    )
    void this.#heartbeat.renewNow() // written before this returns: the write comes before any await
  }

  onLeaseLapsed(listener: (lapse: LeaseLapse) => void): void {
    this.#heartbeat.onLapsed(listener)
  }

  async claim(room: string, gone?: RoomOwner): Promise<OwnershipClaim> {
    const record = this.table.owners.get(room) ?? null
    const step = claimStep(record, record !== null && this.#live(record), this.#self(), gone)
    if (step.kind === 'held') return step.claim
    this.table.owners.set(room, { ...this.self, epoch: step.epoch, boot: this.#boot, released: false })
    return { owned: true, epoch: step.epoch }
  }

  async ownerOf(room: string): Promise<RoomOwner | null> {
    const record = this.table.owners.get(room)
    if (!record || !this.#live(record)) return null
    return { serverId: record.serverId, internalAddress: record.internalAddress, epoch: record.epoch }
  }

  async release(room: string, epoch: number): Promise<void> {
    const record = this.table.owners.get(room)
    if (record?.serverId === this.self.serverId && record.boot === this.#boot && record.epoch === epoch) {
      record.released = true
    }
  }

  /** Stops the heartbeat only: the leases run out by themselves, as after a crash. */
  async close(): Promise<void> {
    this.#heartbeat.stop()
  }

  #self() {
    return { serverId: this.self.serverId, boot: this.#boot }
  }

  #live(record: OwnerRecord): boolean {
    return isLiveOwner(record, this.table.servers.get(record.serverId), this.options.now())
  }
}
