import type { Logger } from '../logger.js'
import type {
  ServerEvent,
  ServerEventListener,
  ServerEventOf,
  ServerEvents,
  ServerEventType,
} from './server-events.js'

type AnyListener = (event: ServerEvent) => void

/**
 * The server's event stream: the core emits, observers (metrics, metadata, webhooks, an app's
 * hooks) listen. Listeners run synchronously in the order they subscribed; one that throws is
 * logged and never stops the others or the room that emitted.
 */
export class EventStream implements ServerEvents {
  readonly #listeners = new Map<ServerEventType, AnyListener[]>()
  readonly #logger: Logger

  constructor(logger: Logger) {
    this.#logger = logger
  }

  on<T extends ServerEventType>(type: T, listener: ServerEventListener<T>): () => void {
    const wrapped = listener as AnyListener
    // A new array each time: an emit in progress keeps the list it started with.
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), wrapped])
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      const left = (this.#listeners.get(type) ?? []).filter((each) => each !== wrapped)
      if (left.length > 0) this.#listeners.set(type, left)
      else this.#listeners.delete(type)
    }
  }

  /**
   * Whether anyone listens for `type`: the hot path asks before it builds an event, so a message
   * nobody listens for allocates nothing.
   */
  listens(type: ServerEventType): boolean {
    return this.#listeners.has(type)
  }

  emit<T extends ServerEventType>(event: ServerEventOf<T>): void {
    const listeners = this.#listeners.get(event.type)
    if (!listeners) return
    for (const listener of listeners) {
      try {
        // An async listener's rejection is its failure too, never an unhandled one.
        const result: unknown = listener(event)
        if (result instanceof Promise) result.catch((error: unknown) => this.#failed(error, event))
      } catch (error) {
        this.#failed(error, event)
      }
    }
  }

  #failed(error: unknown, event: ServerEvent): void {
    this.#logger.error({ err: error, event: event.type, room: event.room }, 'an event listener failed')
  }
}
