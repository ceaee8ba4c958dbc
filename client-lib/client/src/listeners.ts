/**
 * Calls `listener` so that an exception in app code is reported but never unwinds into ours: a
 * throwing status listener must not stop a reconnect, nor a presence listener Yjs's message
 * handling.
 */
export function guarded<A extends unknown[]>(listener: (...args: A) => void): (...args: A) => void {
  return (...args) => {
    try {
      listener(...args)
    } catch (error) {
      if (typeof reportError === 'function') reportError(error)
      else console.error(error)
    }
  }
}

/** A small typed event emitter whose listeners are `guarded`. */
// biome-ignore lint/suspicious/noExplicitAny: listener parameter lists differ per event
export class Listeners<Events extends { [E in keyof Events]: (...args: any[]) => void }> {
  readonly #listeners = new Map<keyof Events, Map<Events[keyof Events], Events[keyof Events]>>()

  /** Adds `listener`; returns the function that removes it. */
  on<E extends keyof Events>(event: E, listener: Events[E]): () => void {
    let forEvent = this.#listeners.get(event)
    if (!forEvent) {
      forEvent = new Map()
      this.#listeners.set(event, forEvent)
    }
    const wrapped = guarded(listener) as Events[E]
    forEvent.set(listener, wrapped)
    return () => forEvent.delete(listener)
  }

  emit<E extends keyof Events>(event: E, ...args: Parameters<Events[E]>): void {
    for (const listener of [...(this.#listeners.get(event)?.values() ?? [])]) listener(...args)
  }

  clear(): void {
    this.#listeners.clear()
  }
}
