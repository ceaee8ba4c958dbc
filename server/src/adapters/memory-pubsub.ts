import type { PubSub, RoomMessageHandler } from '../ports/pubsub.js'

/**
 * The in-process message bus behind `MemoryPubSub`. One bus per process is the embedded
 * default; tests share one bus between several servers to stand in for Redis.
 */
export class MemoryBus {
  readonly #subscribers = new Map<string, Map<string, RoomMessageHandler>>()

  subscribe(room: string, serverId: string, handler: RoomMessageHandler): void {
    let handlers = this.#subscribers.get(room)
    if (!handlers) {
      handlers = new Map()
      this.#subscribers.set(room, handlers)
    }
    handlers.set(serverId, handler)
  }

  unsubscribe(room: string, serverId: string): void {
    const handlers = this.#subscribers.get(room)
    handlers?.delete(serverId)
    if (handlers?.size === 0) this.#subscribers.delete(room)
  }

  hasOtherSubscribers(room: string, serverId: string): boolean {
    const handlers = this.#subscribers.get(room)
    return handlers !== undefined && othersIn(handlers, serverId)
  }

  publish(room: string, fromServerId: string, message: Uint8Array): void {
    const handlers = this.#subscribers.get(room)
    // Alone with a room (the embedded case), a server has no one to tell: the hot path stops here.
    if (!handlers || !othersIn(handlers, fromServerId)) return
    for (const [serverId, handler] of handlers) {
      // Delivered later, like a network message, so publishers never re-enter themselves.
      if (serverId !== fromServerId) queueMicrotask(() => handler(message))
    }
  }
}

function othersIn(handlers: Map<string, RoomMessageHandler>, serverId: string): boolean {
  return handlers.size > 1 || !handlers.has(serverId)
}

/** Embedded `PubSub`: fan-out between servers that share one in-process `MemoryBus`. */
export class MemoryPubSub implements PubSub {
  readonly #rooms = new Set<string>()

  constructor(
    private readonly serverId: string,
    private readonly bus: MemoryBus = new MemoryBus(),
  ) {}

  async subscribe(room: string, handler: RoomMessageHandler): Promise<void> {
    this.#rooms.add(room)
    this.bus.subscribe(room, this.serverId, handler)
  }

  async unsubscribe(room: string): Promise<void> {
    this.#rooms.delete(room)
    this.bus.unsubscribe(room, this.serverId)
  }

  publish(room: string, message: Uint8Array): void {
    this.bus.publish(room, this.serverId, message)
  }

  mayHavePeers(room: string): boolean {
    return this.bus.hasOtherSubscribers(room, this.serverId)
  }

  async close(): Promise<void> {
    for (const room of this.#rooms) this.bus.unsubscribe(room, this.serverId)
    this.#rooms.clear()
  }
}
