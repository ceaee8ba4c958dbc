import type { Backends } from '../backends.js'
import type { AdapterContext, Adapters } from '../ports/adapters.js'
import { openMetadataSink } from './select-metadata-sink.js'
import { openRoomEvents } from './select-room-events.js'
import { openRoomRegistry } from './select-room-registry.js'
import { openSnapshotStore } from './select-snapshot-store.js'
import { openUpdateJournal } from './select-update-journal.js'

/**
 * Every port's adapter: the one `given` for it, else the one its backend names. A port that is
 * given opens nothing of its backend (no connection, no embedded database).
 */
export function openAdapters(
  backends: Backends,
  context: AdapterContext,
  given: Partial<Adapters> = {},
): Required<Adapters> {
  return {
    registry: given.registry ?? openRoomRegistry(backends.registry, context),
    snapshots: given.snapshots ?? openSnapshotStore(backends.snapshots),
    journal: given.journal ?? openUpdateJournal(backends.journal, context),
    metadata: given.metadata ?? openMetadataSink(backends.metadata, context),
    events: given.events ?? openRoomEvents(backends.events, context),
  }
}
