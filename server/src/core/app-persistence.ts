import * as Y from 'yjs'
import { callWithin } from '../deadline.js'
import type { Logger } from '../logger.js'
import { newDoc } from '../protocol/new-doc.js'
import type { ServerHooks } from '../server-hooks.js'

/** What the app's own persistence is built from: its hooks and how long each call may take. */
export interface AppPersistenceInit {
  hooks: Pick<ServerHooks, 'onLoad' | 'onStore'>
  /** `HOOK_TIMEOUT_MS`. */
  timeoutMs: number
  logger: Logger
}

/**
 * The app's persistence beside the snapshot store (`onLoad`, `onStore`): a new room's first
 * content, and each saved snapshot handed over. The server's own stores stay the record of what
 * is saved: neither hook can lose or hold back an acknowledged edit.
 */
export class AppPersistence {
  readonly #init: AppPersistenceInit

  constructor(init: AppPersistenceInit) {
    this.#init = init
  }

  /** Whether the app takes each saved snapshot (the writer skips the call otherwise). */
  get storesSnapshots(): boolean {
    return this.#init.hooks.onStore !== undefined
  }

  /** The first content of `room`, loading with nothing stored; rejects (the load fails and is retried) if `onLoad` does. */
  async seed(room: string): Promise<Uint8Array | null> {
    const { onLoad } = this.#init.hooks
    if (!onLoad) return null
    const seed = await callWithin(() => onLoad({ room }), this.#init.timeoutMs, 'the onLoad hook')
    if (seed != null && !(seed instanceof Uint8Array))
      throw new TypeError('onLoad must return a Yjs update (a Uint8Array) or nothing')
    return seed && seed.length > 0 ? seed : null
  }

  /** Hands a saved snapshot to `onStore`; resolves false (logged) when it failed, so the next save calls it again. */
  async stored(room: string, state: Uint8Array): Promise<boolean> {
    const { onStore } = this.#init.hooks
    if (!onStore) return true
    let doc: Y.Doc | null = null
    try {
      await callWithin(
        () =>
          onStore({
            room,
            state,
            document: () => {
              if (!doc) {
                doc = newDoc()
                Y.applyUpdate(doc, state)
              }
              return doc
            },
          }),
        this.#init.timeoutMs,
        'the onStore hook',
      )
      return true
    } catch (error) {
      this.#init.logger.error({ err: error, room }, 'onStore failed; it is called again at the next save')
      return false
    } finally {
      ;(doc as Y.Doc | null)?.destroy()
    }
  }
}
