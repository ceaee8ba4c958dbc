import { randomBytes } from 'node:crypto'
import type { JournalConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import type { UpdateJournal } from '../ports/update-journal.js'
import { FileUpdateJournal } from './file-update-journal.js'
import { MemoryUpdateJournal } from './memory-update-journal.js'
import { RedisUpdateJournal } from './redis-update-journal.js'

/** The `UpdateJournal` adapter `JOURNAL` names (by default in the cluster's Redis, `PUBSUB`). */
export function openUpdateJournal(config: JournalConfig, context: AdapterContext): UpdateJournal {
  switch (config.kind) {
    case 'memory':
      return new MemoryUpdateJournal()
    case 'file':
      return new FileUpdateJournal(config.folder)
    case 'redis':
      // A writer per start, even under a fixed SERVER_ID: a server restarted at once must not pass
      // for its dead predecessor, whose last entries the servers holding its rooms adopt.
      return new RedisUpdateJournal(
        `${context.self.serverId}:${randomBytes(4).toString('hex')}`,
        config.url,
        {
          logger: context.logger,
          outcomes: context.outcomes,
          cluster: config.cluster,
          link: config.link,
        },
      )
  }
}
