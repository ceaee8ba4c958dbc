import * as Y from 'yjs'
import { newDoc } from './new-doc.js'
import { AUTHORS_ROOT } from './update-scan.js'
import { ContentEmbed, ContentFormat, ContentString, firstItem, mapItems } from './yjs-internals.js'

/** Text items are strings, formatting marks or embeds; list items are values and types. */
function isText<T>(type: Y.AbstractType<T>): boolean {
  for (let item = firstItem(type); item; item = item.right) {
    if (item.deleted) continue
    const { content } = item
    return (
      content instanceof ContentString || content instanceof ContentFormat || content instanceof ContentEmbed
    )
  }
  return false
}

/**
 * Every top-level shared type of a Yjs update as JSON, but the server's `AUTHORS_ROOT` (the REST
 * API answers it at `…/authors`). An update does not record which kind each root type is, so it
 * is read by shape: keys make a map; items a text when they are strings, otherwise a list.
 */
export function documentToJson(update: Uint8Array): Record<string, unknown> {
  const doc = newDoc()
  try {
    Y.applyUpdate(doc, update)
    const json: Record<string, unknown> = {}
    for (const [name, type] of doc.share) {
      if (name === AUTHORS_ROOT) continue
      if (mapItems(type).size > 0) json[name] = doc.getMap(name).toJSON()
      else if (isText(type)) json[name] = doc.getText(name).toString()
      else json[name] = doc.getArray(name).toJSON()
    }
    return json
  } finally {
    doc.destroy()
  }
}
