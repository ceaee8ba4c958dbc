import * as Y from 'yjs'

/**
 * Empties every root type of `doc` in one transaction with `origin`: what a room deleted on the
 * server leaves behind. The types stay the same objects, so whatever the app holds (`room.list`,
 * an editor binding, a React hook) reads them empty and hears the change through its observers.
 * Types the app never asked for (received, but never read through `getMap` and the like) are
 * emptied too, so asking for one later finds nothing of the deleted content.
 */
export function clearDocument(doc: Y.Doc, origin: unknown): void {
  doc.transact((transaction) => {
    for (const type of doc.share.values()) {
      // A key's current entry: exactly what Y.Map's delete removes.
      for (const item of type._map.values()) item.delete(transaction)
      if (type instanceof Y.Array || type instanceof Y.Text || type instanceof Y.XmlFragment) {
        // Their own delete, which keeps their position cache (search markers) right.
        type.delete(0, type.length)
      } else {
        for (let item = type._start; item !== null; item = item.right) item.delete(transaction)
      }
    }
  }, origin)
}
