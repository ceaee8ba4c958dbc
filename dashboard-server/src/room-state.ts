import * as Y from 'yjs'
import { ApiError } from './app-error.js'

/** How long a live server may take to hand over a room's state. */
const FETCH_TIMEOUT_MS = 3_000

/**
 * A room's document as JSON, read live from a sync server holding it (its internal endpoint,
 * address from the metadata tables), trying each holder in turn.
 */
export async function fetchRoomState(
  room: string,
  addresses: string[],
  internalToken: string | null,
): Promise<unknown> {
  if (!internalToken) {
    throw new ApiError(503, 'NO_INTERNAL_TOKEN', 'set INTERNAL_TOKEN (the sync servers’) to read live rooms')
  }
  for (const address of addresses) {
    try {
      const response = await fetch(`http://${address}/internal/rooms/${room}/state`, {
        headers: { authorization: `Bearer ${internalToken}` },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      })
      if (!response.ok) continue
      return documentToJson(new Uint8Array(await response.arrayBuffer()))
    } catch {
      // That server is gone or slow; the next one may answer.
    }
  }
  throw new ApiError(404, 'ROOM_NOT_LIVE', `no live server holds "${room}" right now`)
}

/**
 * Every top-level shared type of a Yjs update as JSON. An update does not record which kind each
 * root type is, so it is read by shape: keys make a map; items a text when they are strings,
 * otherwise a list.
 */
export function documentToJson(update: Uint8Array): Record<string, unknown> {
  const doc = new Y.Doc()
  try {
    Y.applyUpdate(doc, update)
    const json: Record<string, unknown> = {}
    for (const [name, type] of doc.share) {
      if (type._map.size > 0) json[name] = doc.getMap(name).toJSON()
      else if (type._start?.content instanceof Y.ContentString) json[name] = doc.getText(name).toString()
      else json[name] = doc.getArray(name).toJSON()
    }
    return json
  } finally {
    doc.destroy()
  }
}
