import type * as Y from 'yjs'
import {
  CLIENT_STRUCTS,
  firstEndingAfter,
  isGarbage,
  type ScannedStruct,
  type ScannedUpdate,
} from './update-scan.js'
import { clientCount, structRuns, waitingDeletions, waitingStructs } from './yjs-internals.js'

/**
 * The most structs (and clients) a room gains by integrating a scanned update: what its memory
 * grows by, at 100–300 bytes of heap each, where the update spends 2–20 bytes on each. Counted
 * without building anything: each struct of the update (a run of garbage-collected ones is one,
 * Yjs merges them), each client new to the room (as `CLIENT_STRUCTS`), and each struct the
 * update may cut in two (a reference into the middle of an item, or a deleted range that starts
 * or ends in one). A cut inside the update's own structs is counted only where it falls inside
 * one, so a real document's whole state (whose references and deletions fall on its own
 * boundaries) counts as its structs; a cut into what the room already holds counts once per
 * position, as the scan cannot see the room's boundaries.
 */
export function structsAdded(scanned: ScannedUpdate, stateOf: (client: number) => number): number {
  let structs = 0
  for (const [client, run] of scanned.structs) {
    if (stateOf(client) === 0) structs += CLIENT_STRUCTS
    for (const struct of run) if (!struct.gap) structs++
  }
  const roomCuts = new Map<number, Set<number>>()
  const { cuts } = scanned
  for (let i = 0; i < cuts.length; i += 2) {
    const client = cuts[i] as number
    const clock = cuts[i + 1] as number
    const holder = holding(scanned.structs.get(client), clock)
    if (holder) {
      if (holder.clock < clock && !holder.gap && !isGarbage(holder)) structs++
    } else if (clock < stateOf(client)) {
      const positions = roomCuts.get(client) ?? new Set<number>()
      roomCuts.set(client, positions)
      positions.add(clock)
    }
  }
  for (const positions of roomCuts.values()) structs += positions.size
  return structs
}

/** The struct of `run` whose clocks include `clock`, if any. */
function holding(run: ScannedStruct[] | undefined, clock: number): ScannedStruct | undefined {
  const struct = run?.[firstEndingAfter(run, clock)]
  return struct && struct.clock <= clock ? struct : undefined
}

/**
 * What a document's memory grows with: its structs and its clients (as `CLIENT_STRUCTS` each), plus a byte's worth for each byte it holds waiting (structs and deletions that will
 * integrate later, unseen by `structsAdded` then). O(clients).
 */
export function documentStructs(doc: Y.Doc): number {
  let structs = clientCount(doc) * CLIENT_STRUCTS
  for (const run of structRuns(doc)) structs += run.length
  return structs + (waitingStructs(doc)?.update.length ?? 0) + (waitingDeletions(doc)?.length ?? 0)
}
