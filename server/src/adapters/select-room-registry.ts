import type { RegistryConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import type { RoomRegistry } from '../ports/room-registry.js'
import { createDynamoClient } from './aws-clients.js'
import { DynamoRoomRegistry } from './dynamo-room-registry.js'
import { MemoryRoomRegistry } from './memory-room-registry.js'

/** The `RoomRegistry` adapter `REGISTRY` names, holding leases of `REGISTRY_LEASE_MS`. */
export function openRoomRegistry(config: RegistryConfig, context: AdapterContext): RoomRegistry {
  const lease = { leaseMs: config.leaseMs, now: Date.now }
  switch (config.kind) {
    case 'memory':
      return new MemoryRoomRegistry(context.self, lease)
    case 'dynamodb':
      return new DynamoRoomRegistry(context.self, {
        ...lease,
        tableName: config.table,
        client: createDynamoClient(config.aws),
        logger: context.logger,
        outcomes: context.outcomes,
      })
  }
}
