import { IndexeddbPersistence } from 'y-indexeddb'
import type * as Y from 'yjs'

/** Whether this runtime has IndexedDB (browsers do; Node does not). */
export function hasIndexedDb(): boolean {
  return typeof indexedDB !== 'undefined'
}

/**
 * The room's copy in IndexedDB (y-indexeddb): every update, local or remote, is appended, so a
 * page reloaded offline shows everything it had. `ready` resolves once the stored state is in
 * the document, and rejects when IndexedDB cannot be opened (some private windows).
 */
export function openOfflineStore(name: string, doc: Y.Doc): { ready: Promise<void>; close(): Promise<void> } {
  const persistence = new IndexeddbPersistence(name, doc)
  // y-indexeddb's whenSynced never settles when the database fails to open; race the opening.
  const failed = persistence._db.then(() => new Promise<never>(() => {}))
  const ready = Promise.race([persistence.whenSynced, failed]).then(() => undefined)
  return { ready, close: () => persistence.destroy() }
}
