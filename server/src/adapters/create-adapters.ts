import type { Config } from '../config.js'
import type { Logger } from '../logger.js'
import { NO_ROOM_EVENTS } from '../ports/room-events.js'
import type { PeerServer } from '../ports/room-registry.js'
import type { AdapterProbes, Adapters } from '../sync-server.js'
import { createAwsClients } from './aws-clients.js'
import { DynamoRoomRegistry } from './dynamo-room-registry.js'
import { FileSnapshotStore } from './file-snapshot-store.js'
import { FileUpdateJournal } from './file-update-journal.js'
import { MemoryPubSub } from './memory-pubsub.js'
import { MemoryRoomRegistry } from './memory-room-registry.js'
import { NoopMetadataSink } from './noop-metadata-sink.js'
import { connectDatabase } from './postgres/connect.js'
import { PgMetadataSink } from './postgres/pg-metadata-sink.js'
import { RedisPubSub } from './redis-pubsub.js'
import { RedisUpdateJournal } from './redis-update-journal.js'
import { S3SnapshotStore } from './s3-snapshot-store.js'
import { webhookKey } from './webhooks/standard-webhooks.js'
import { WebhookSender } from './webhooks/webhook-sender.js'

/** Builds the adapter for each port from the parsed configuration; they report failures to `probes.outcomes`. */
export function createAdapters(
  config: Config,
  self: PeerServer,
  logger: Logger,
  probes: AdapterProbes,
): Adapters {
  const { outcomes } = probes
  let clients: ReturnType<typeof createAwsClients> | undefined
  // Only cluster mode talks to AWS; embedded mode creates no clients.
  const aws = () => (clients ??= createAwsClients(config.aws))
  const lease = { leaseMs: config.registryLeaseMs, now: Date.now }
  return {
    pubsub:
      config.pubsub.kind === 'redis'
        ? new RedisPubSub(config.serverId, config.pubsub.url, { logger, outcomes })
        : new MemoryPubSub(config.serverId),
    registry:
      config.registry.kind === 'dynamodb'
        ? new DynamoRoomRegistry(self, {
            ...lease,
            tableName: config.registry.table,
            client: aws().dynamo,
            logger,
            outcomes,
          })
        : new MemoryRoomRegistry(self, lease),
    snapshots:
      config.snapshots.kind === 's3'
        ? new S3SnapshotStore({
            bucket: config.snapshots.bucket,
            prefix: config.snapshots.prefix,
            client: aws().s3,
          })
        : new FileSnapshotStore(config.snapshots.folder),
    journal:
      config.journal.kind === 'redis'
        ? new RedisUpdateJournal(config.serverId, config.journal.url, { logger, outcomes })
        : new FileUpdateJournal(config.journal.folder),
    metadata: createMetadataSink(config, self, logger, probes),
    events: config.webhook
      ? new WebhookSender({
          url: config.webhook.url,
          key: webhookKey(config.webhook.secret),
          debounceMs: config.webhook.debounceMs,
          logger,
        })
      : NO_ROOM_EVENTS,
  }
}

function createMetadataSink(config: Config, self: PeerServer, logger: Logger, probes: AdapterProbes) {
  const { database } = config
  if (database.kind === 'none') return new NoopMetadataSink()
  const sink = new PgMetadataSink({
    serverId: config.serverId,
    address: self.internalAddress || `${config.host}:${config.port}`,
    connect: () => connectDatabase(database, logger),
    logger,
    outcomes: probes.outcomes,
    sample: probes.sample,
    sampleIntervalMs: config.metadataSampleIntervalMs,
    retentionMs: config.metadataRetentionDays * 86_400_000,
  })
  // Connect (and start embedded PGlite) now rather than at the first flush: the dashboard waits on it.
  void sink.flush()
  return sink
}
