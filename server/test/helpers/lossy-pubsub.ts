import { MemoryPubSub } from '../../src/adapters/memory-pubsub.js'
import type { RoomMessageHandler } from '../../src/ports/pubsub.js'

/** A MemoryPubSub that can drop what it receives, like a subscriber cut off from Redis. */
export class LossyPubSub extends MemoryPubSub {
  dropping = false
  dropped = 0
  readonly #lossListeners: (() => void)[] = []

  onPossibleLoss(listener: () => void): void {
    this.#lossListeners.push(listener)
  }

  /** Hears again, and says it may have missed messages, as the Redis adapter does once it subscribed again. */
  reconnect(): void {
    this.dropping = false
    for (const listener of this.#lossListeners) listener()
  }
  override subscribe(room: string, handler: RoomMessageHandler): Promise<void> {
    return super.subscribe(room, (message) => {
      if (!this.dropping) return handler(message)
      this.dropped++
    })
  }
}
