import type { EventsConfig } from '../backends.js'
import type { AdapterContext } from '../ports/adapters.js'
import { NO_ROOM_EVENTS, type RoomEventSink } from '../ports/room-events.js'
import { webhookKey } from './webhooks/standard-webhooks.js'
import { WebhookSender } from './webhooks/webhook-sender.js'

/** The `RoomEventSink` adapter `WEBHOOK_URL` names, or nobody to tell. */
export function openRoomEvents(config: EventsConfig, context: AdapterContext): RoomEventSink {
  switch (config.kind) {
    case 'none':
      return NO_ROOM_EVENTS
    case 'webhook':
      return new WebhookSender({
        url: config.url,
        key: webhookKey(config.secret),
        debounceMs: config.debounceMs,
        logger: context.logger,
      })
  }
}
