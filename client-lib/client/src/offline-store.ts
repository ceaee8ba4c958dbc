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
export function openOfflineStore(
  name: string,
  doc: Y.Doc,
): { ready: Promise<void>; close(): Promise<void>; clear(): Promise<void> } {
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
  return { ready, close: () => persistence.destroy(), clear: () => persistence.clearData() }
}
