import type { JournalConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import type { UpdateJournal } from '../ports/update-journal.js'
import { FileUpdateJournal } from './file-update-journal.js'
import { MemoryUpdateJournal } from './memory-update-journal.js'
import { RedisUpdateJournal } from './redis-update-journal.js'

/** The `UpdateJournal` adapter `JOURNAL` names (by default the one beside pub/sub). */
export function openUpdateJournal(config: JournalConfig, context: AdapterContext): UpdateJournal {
  switch (config.kind) {
    case 'memory':
      return new MemoryUpdateJournal(context.self.serverId)
    case 'file':
      return new FileUpdateJournal(config.folder)
    case 'redis':
      return new RedisUpdateJournal(context.self.serverId, config.url, {
        logger: context.logger,
        outcomes: context.outcomes,
        cluster: config.cluster,
        link: config.link,
      })
  }
}
