import type { ServerEvents } from '../core/server-events.js'
import type { Logger } from '../logger.js'
import type { ServerMetrics } from '../metrics.js'
import type { MetadataSink } from '../ports/metadata-sink.js'
import type { RoomEventSink } from '../ports/room-events.js'
import type { ServerHooks } from '../server-hooks.js'
import { type HooksObserver, observeHooks } from './hooks-observer.js'
import { observeMetadata } from './metadata-observer.js'
import { observeMetrics } from './metrics-observer.js'
import { observeWebhooks } from './webhook-observer.js'

export interface ServerObservers {
  metrics: ServerMetrics
  metadata: MetadataSink
  webhooks: RoomEventSink
  hooks: ServerHooks
  /** The longest one call of `onDisconnect` or `onChange` may take before it is logged and the next may run. */
  hookTimeoutMs: number
  logger: Logger
}

/**
 * The one place where what observes the server subscribes to its event stream: `/metrics`, the
 * metadata database, webhooks, then the app's hooks (in that order, each event).
 */
export function observeServer(events: ServerEvents, observers: ServerObservers): HooksObserver {
  observeMetrics(events, observers.metrics)
  observeMetadata(events, observers.metadata)
  observeWebhooks(events, observers.webhooks)
  return observeHooks(events, observers)
}
