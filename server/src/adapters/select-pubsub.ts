import type { PubSubConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import type { PubSub } from '../ports/pubsub.js'
import { MemoryPubSub } from './memory-pubsub.js'
import { RedisPubSub } from './redis-pubsub.js'

/** The `PubSub` adapter `PUBSUB` names. */
export function openPubSub(config: PubSubConfig, context: AdapterContext): PubSub {
  const { serverId } = context.self
  switch (config.kind) {
    case 'memory':
      return new MemoryPubSub(serverId)
    case 'redis':
      return new RedisPubSub(serverId, config.url, {
        logger: context.logger,
        outcomes: context.outcomes,
        link: config.link,
        flushMs: config.flushMs,
      })
  }
}
