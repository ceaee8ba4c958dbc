import type { Logger } from '../logger.js'
import type { DependencyOutcomes } from './dependency-outcomes.js'
import type { MetadataSink, ServerSample } from './metadata-sink.js'
import type { RoomEventSink } from './room-events.js'
import type { RoomRegistry, ServerAddress } from './room-registry.js'
import type { SnapshotStore } from './snapshot-store.js'
import type { UpdateJournal } from './update-journal.js'

/** One adapter per port: everything a server talks to outside its process. The server closes each at shutdown. */
export interface Adapters {
  registry: RoomRegistry
  snapshots: SnapshotStore
  journal: UpdateJournal
  metadata: MetadataSink
  /** Webhooks; none when unset. */
  events?: RoomEventSink
}

/** What adapters may read from the server they serve (called later, never while being built). */
export interface AdapterProbes {
  /** Where adapters report each operation's success or failure (`/healthz`, error counters). */
  outcomes: DependencyOutcomes
  /** The server's load and running totals now, for the metadata sink's server samples. */
  sample: () => Promise<ServerSample>
}

/** What a server hands the adapters it builds: who it is, where to log, and its probes. */
export interface AdapterContext extends AdapterProbes {
  /** This server; `internalAddress` is '' in single-server mode (no internal endpoint). */
  self: ServerAddress
  /** Where operators find this server: its internal endpoint, else its public `host:port`. */
  address: string
  logger: Logger
  /** How often the server samples its rooms and itself for the metadata sink (0: never). */
  metadataSampleIntervalMs: number
}
