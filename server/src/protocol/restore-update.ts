import { isDeepStrictEqual } from 'node:util'
import * as Y from 'yjs'
import { SymphonyError } from '../errors.js'
import { documentToJson } from './document-json.js'
import { newDoc } from './new-doc.js'
import { SERVER_CLIENTS_FROM } from './reserved-writes.js'
import { AUTHORS_ROOT } from './update-scan.js'
import { holdsClient } from './yjs-internals.js'

/** Transaction origin of the live changes replayed onto the old version (the ones undone). */
const SINCE = Symbol('since the version')

/** The restore update could not be made to give the version's content (a bug: it is not sent). */
export class RestoreMismatchError extends SymphonyError {
  constructor(message: string) {
    super('RESTORE_MISMATCH', message)
  }
}

/**
 * The Yjs update that turns the live document (`live`, its whole state) back into the content of
 * `version` (an earlier state of the same document, so every struct it holds is in `live`'s
 * history), as an ordinary edit: applied to the room, every client sees it, and offline copies
 * merge onto it.
 *
 * How: the version is loaded into a scratch document (no garbage collection, so what it held stays
 * whole), an undo manager is scoped to every root type but the server's `AUTHORS_ROOT`, the live
 * changes since the version are applied under an origin it tracks, and undone. Undoing re-inserts
 * what was deleted since (as new items) and deletes what was inserted since, leaving alone what did
 * not change, so other clients' positions in it still hold. What the scratch document then holds
 * beyond the live one is the update. Its new items are written under a client id the live document
 * has never seen (a fresh writer, bound to whoever applies it).
 *
 * The result is checked: applied to a copy of the live state, its JSON must be the version's
 * (`RestoreMismatchError` if not, which would be a bug).
 */
export function restoreUpdate(live: Uint8Array, version: Uint8Array): Uint8Array {
  const liveDoc = newDoc()
  const scratch = newDoc({ gc: false })
  try {
    Y.applyUpdate(liveDoc, live)
    scratch.clientID = freshClientId(liveDoc)
    Y.applyUpdate(scratch, version)
    const roots = new Set([...liveDoc.share.keys(), ...scratch.share.keys()])
    roots.delete(AUTHORS_ROOT)
    // A root read without its kind stays a bare AbstractType, which reports no changes to an undo
    // manager; any kind reports them, and undo works on items whatever the kind.
    const undo = new Y.UndoManager(
      [...roots].map((name) => scratch.getArray(name)),
      { trackedOrigins: new Set([SINCE]), captureTimeout: 0 },
    )
    try {
      Y.applyUpdate(scratch, Y.encodeStateAsUpdate(liveDoc, Y.encodeStateVector(scratch)), SINCE)
      undo.undo()
    } finally {
      undo.destroy()
    }
    const update = Y.encodeStateAsUpdate(scratch, Y.encodeStateVector(liveDoc))
    Y.applyUpdate(liveDoc, update)
    const got = contentOf(Y.encodeStateAsUpdate(liveDoc))
    if (!isDeepStrictEqual(got, contentOf(version))) {
      throw new RestoreMismatchError('the restore update does not give the version’s content')
    }
    return update
  } finally {
    liveDoc.destroy()
    scratch.destroy()
  }
}

/**
 * A document's JSON without the root types that hold nothing: a root emptied by the restore is
 * still there in the live document, where the version may never have had it.
 */
export function contentOf(state: Uint8Array): Record<string, unknown> {
  const json = documentToJson(state)
  for (const [name, value] of Object.entries(json)) {
    const empty =
      value === '' ||
      (Array.isArray(value) && value.length === 0) ||
      (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
    if (empty) delete json[name]
  }
  return json
}

/** A Yjs client id (below the server's own) that `doc` holds nothing under. */
function freshClientId(doc: Y.Doc): number {
  for (;;) {
    const id = Math.floor(Math.random() * SERVER_CLIENTS_FROM)
    if (!holdsClient(doc, id)) return id
  }
}
