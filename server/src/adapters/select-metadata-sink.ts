import type { MetadataConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import { NoopMetadataSink } from './noop-metadata-sink.js'
import { connectDatabase } from './postgres/connect.js'
import { PgMetadataSink } from './postgres/pg-metadata-sink.js'

const DAY_MS = 86_400_000

/** The `MetadataSink` adapter `DATABASE_URL` names: Postgres, embedded PGlite, or none. */
export function openMetadataSink(config: MetadataConfig, context: AdapterContext): MetadataSink {
  switch (config.kind) {
    case 'none':
      return new NoopMetadataSink()
    case 'postgres':
    case 'pglite': {
      const { logger } = context
      const sink = new PgMetadataSink({
        serverId: context.self.serverId,
        address: context.address,
        connect: () => connectDatabase(config, logger),
        logger,
        outcomes: context.outcomes,
        sample: context.sample,
        metadataSampleIntervalMs: context.metadataSampleIntervalMs,
        retentionMs: config.retentionDays * DAY_MS,
      })
      // Connect (and start embedded PGlite) now rather than at the first flush: the dashboard waits on it.
      void sink.flush()
      return sink
    }
  }
}
