import type { Logger } from '../logger.js'
import type { RoomRegistry } from '../ports/room-registry.js'
import type { SnapshotStore } from '../ports/snapshot-store.js'
import type { UpdateJournal } from '../ports/update-journal.js'
import type { ServerHooks } from '../server-hooks.js'
import type { CoreMetrics } from './core-metrics.js'
import type { EventStream } from './event-stream.js'
import type { MemoryCharges } from './memory-budget.js'
import type { RoomOptions } from './room-init.js'
import type { LoadRetry } from './room-life.js'
import type { RoomStateSource } from './room-state-source.js'
import type { SnapshotPolicy } from './snapshot-writer.js'

export interface RoomManagerOptions extends RoomOptions {
  /** How long an empty room stays loaded, since reconnects are common. */
  roomGraceMs: number
  /** The longest a load, unload or deletion waits for the registry (failures are tolerated). */
  registryWaitMs?: number
  /** How a failed load is retried while someone waits for the room; unset: not retried. */
  loadRetry?: LoadRetry
  snapshot: SnapshotPolicy
  /** The longest an app's hook may take (`HOOK_TIMEOUT_MS`). */
  hookTimeoutMs?: number
  /** Names the server on the broadcast events it sends itself. */
  serverId?: string
}

export interface RoomManagerDeps {
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  stateSource: RoomStateSource
  /** Told what happens to the rooms (loaded, unloaded, deleted, changed, saved…). */
  events: EventStream
  metrics: CoreMetrics
  /** The server's memory budget: each room charges its presence and big updates to it. */
  memory?: MemoryCharges
  /** The embedding app's hooks (`ServerHooks`); default none. */
  hooks?: ServerHooks
  logger: Logger
}
