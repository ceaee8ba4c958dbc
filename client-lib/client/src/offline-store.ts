import { IndexeddbPersistence } from 'y-indexeddb'
import type * as Y from 'yjs'

/** Whether this runtime has IndexedDB (browsers do; Node does not). */
export function hasIndexedDb(): boolean {
  return typeof indexedDB !== 'undefined'
}

/** How long the stored state may take to load before the room connects without it. */
const LOAD_TIMEOUT_MS = 5_000

/**
 * The room's copy in IndexedDB (y-indexeddb): every update, local or remote, is appended, so a
 * page reloaded offline shows everything it had. `ready` resolves once the stored state is in
 * the document, and rejects when IndexedDB cannot be opened (some private windows) or loading
 * stalls (y-indexeddb never settles if a stored update fails to apply, or the open is blocked).
 */
export interface OfflineStore {
  ready: Promise<void>
  /** The room incarnation the stored copy belongs to, once a server named it. */
  incarnation(): Promise<number | null>
  setIncarnation(incarnation: number): Promise<void>
  close(): Promise<void>
  clear(): Promise<void>
}

/** Where the copy's incarnation is kept, beside y-indexeddb's updates. */
const INCARNATION_KEY = 'symphony-incarnation'

export function openOfflineStore(name: string, doc: Y.Doc): OfflineStore {
  const persistence = new IndexeddbPersistence(name, doc)
  // y-indexeddb's whenSynced never settles when the database fails to open; race the opening.
  const failed = persistence._db.then(() => new Promise<never>(() => {}))
  let timer: ReturnType<typeof setTimeout> | undefined
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no stored state after ${LOAD_TIMEOUT_MS} ms`)),
      LOAD_TIMEOUT_MS,
    )
  })
  const ready = Promise.race([persistence.whenSynced, failed, stalled])
    .then(() => undefined)
    .finally(() => clearTimeout(timer))
  return {
    ready,
    incarnation: async () => {
      const stored: unknown = await persistence.get(INCARNATION_KEY)
      return typeof stored === 'number' ? stored : null
    },
    setIncarnation: async (incarnation) => {
      await persistence.set(INCARNATION_KEY, incarnation)
    },
    close: () => persistence.destroy(),
    clear: () => persistence.clearData(),
  }
}
