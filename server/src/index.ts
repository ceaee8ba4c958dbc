// @symphony/server as a library: run the sync server inside your process, and build adapters for
// its ports. Importing this starts nothing; `createSyncServer` does. The port contract suites are
// at `@symphony/server/contracts`. Guide: docs/embedding.md.

export {
  type AwsClients,
  createAwsClients,
  createDynamoClient,
  createS3Client,
} from './adapters/aws-clients.js'
export {
  createRegistryTable,
  DynamoRoomRegistry,
  type DynamoRoomRegistryOptions,
} from './adapters/dynamo-room-registry.js'
export { FileSnapshotStore, type FileSnapshotStoreOptions } from './adapters/file-snapshot-store.js'
export { FileUpdateJournal, type FileUpdateJournalOptions } from './adapters/file-update-journal.js'
export { MemoryRegistryTable, MemoryRoomRegistry } from './adapters/memory-room-registry.js'
export { MemorySnapshotStore } from './adapters/memory-snapshot-store.js'
export { MemoryJournalTable, MemoryUpdateJournal } from './adapters/memory-update-journal.js'
export { NoopMetadataSink } from './adapters/noop-metadata-sink.js'
export { PgMetadataSink, type PgMetadataSinkOptions } from './adapters/postgres/pg-metadata-sink.js'
export { RedisUpdateJournal, type RedisUpdateJournalOptions } from './adapters/redis-update-journal.js'
export {
  createSnapshotBucket,
  S3SnapshotStore,
  type S3SnapshotStoreOptions,
} from './adapters/s3-snapshot-store.js'
export { openAdapters } from './adapters/select-adapters.js'
export { openMetadataSink } from './adapters/select-metadata-sink.js'
export { openRoomEvents } from './adapters/select-room-events.js'
export { openRoomRegistry } from './adapters/select-room-registry.js'
export { openSnapshotStore } from './adapters/select-snapshot-store.js'
export { openUpdateJournal } from './adapters/select-update-journal.js'
export { WebhookSender, type WebhookSenderOptions } from './adapters/webhooks/webhook-sender.js'
export type { AuthConfig } from './auth/authenticator.js'
export type {
  AwsClientOptions,
  Backends,
  DatabaseConfig,
  EventsConfig,
  JournalConfig,
  MetadataConfig,
  RegistryConfig,
  SnapshotsConfig,
} from './backends.js'
export { type Config, parseConfig, snapshotsFrom } from './config.js'
export type {
  ChangeOrigin,
  ConnectionInfo,
  ServerEvent,
  ServerEventListener,
  ServerEventOf,
  ServerEvents,
  ServerEventType,
} from './core/server-events.js'
export type { SnapshotPolicy } from './core/snapshot-writer.js'
export { createSyncServer } from './create-sync-server.js'
export {
  ConfigError,
  ConnectionRefusedError,
  SnapshotConflictError,
  SnapshotVersionNotFoundError,
  SymphonyError,
} from './errors.js'
export { createLogger, type Logger, type LogLevel, silentLogger } from './logger.js'
export type { BuildInfo } from './metrics.js'
export type { AdapterContext, AdapterProbes, Adapters } from './ports/adapters.js'
export { type Dependency, type DependencyOutcomes, IGNORED_OUTCOMES } from './ports/dependency-outcomes.js'
export type { MetadataEvent, MetadataSink, MetadataSinkStats, ServerSample } from './ports/metadata-sink.js'
export type { CatalogPage, CatalogQuery, CatalogRoom, RoomCatalog } from './ports/room-catalog.js'
export { NO_ROOM_EVENTS, type RoomEvent, type RoomEventSink } from './ports/room-events.js'
export type {
  LeaseLapse,
  OwnershipClaim,
  RoomOwner,
  RoomOwnership,
  RoomRegistry,
  ServerAddress,
} from './ports/room-registry.js'
export type {
  SnapshotHead,
  SnapshotStore,
  SnapshotVersion,
  SnapshotVersionPage,
  StoredSnapshot,
} from './ports/snapshot-store.js'
export {
  checkVersionsLimit,
  currentGeneration,
  MAX_VERSIONS_PAGE,
  VERSION_ID_PATTERN,
} from './ports/snapshot-store.js'
export type { JournalContents, JournalPosition, UpdateJournal } from './ports/update-journal.js'
export type { RoomApi } from './room-api.js'
export {
  type AppMessage,
  type AppMessageHandler,
  type ChangeInfo,
  DEFAULT_ON_CHANGE_DEBOUNCE_MS,
  DEFAULT_ON_CHANGE_MAX_WAIT_MS,
  HookRefusal,
  type HookUser,
  NO_HOOKS,
  type RoomToLoad,
  refuse,
  type ServerHooks,
  type StoredRoom,
  type UpdateToApply,
} from './server-hooks.js'
export {
  DEFAULT_LIMITS,
  DEFAULT_SNAPSHOT_POLICY,
  DEFAULT_TIMINGS,
  type InternalEndpointOptions,
  type Limits,
  type SyncServerOptions,
} from './server-options.js'
export type { SyncServer } from './sync-server.js'
