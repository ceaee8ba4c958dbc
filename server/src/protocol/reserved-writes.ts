import { ProtocolError } from '../errors.js'
import { type ClockRanges, rangesOf } from './held-content.js'
import { AUTHORS_ROOT, type ScannedUpdate } from './update-scan.js'

/**
 * The server writes a room's author bindings under client ids from here on. Yjs clients draw
 * theirs below 2^32, so an id tells by its form whose it is, even one no update has brought yet.
 */
export const SERVER_CLIENTS_FROM = 2 ** 32

export const isServerClient = (client: number): boolean => client >= SERVER_CLIENTS_FROM

/** What an update holds under the server's client ids: only a copy of what the room holds may pass. */
export interface ServerParts {
  structs: ClockRanges
  deletions: Map<number, number[]>
}

/**
 * Refuses (`ProtocolError`) a client's update that would write what the server keeps of a room's
 * authors (`core/author-binding.ts`): a struct of its own under `AUTHORS_ROOT`, or one that refers to an item
 * under a server client id (every item there belongs to that root type, so this is every other
 * way into it: a map entry's overwrite has the previous entry as its origin; and an id of the
 * server's that the room has not received yet is refused as well, so nothing can wait for it).
 * Returns what the update holds under server client ids: clients resend what they received
 * (y-indexeddb replays it, a sync answer may carry it), so those parts are the caller's to check
 * against what the room holds.
 */
export function checkReservedWrites(scanned: ScannedUpdate): ServerParts {
  for (const client of scanned.authorsRootWriters) {
    if (!isServerClient(client)) {
      throw new ProtocolError(`the root type ${AUTHORS_ROOT} is the server's: clients may not write it`)
    }
  }
  const structs: ClockRanges = new Map()
  for (const [client, run] of scanned.structs) {
    if (isServerClient(client)) {
      const ranges = rangesOf({ ...scanned, structs: new Map([[client, run]]) }).get(client)
      if (ranges) structs.set(client, ranges)
      continue
    }
    for (const struct of run) {
      for (let i = 0; i < struct.needs.length; i += 2) {
        const other = struct.needs[i] as number
        if (isServerClient(other)) {
          throw new ProtocolError(`client id ${other} is the server's: an update may not refer to its items`)
        }
      }
    }
  }
  const deletions = new Map<number, number[]>()
  for (const [client, ranges] of scanned.deletions) {
    if (isServerClient(client)) deletions.set(client, ranges)
  }
  return { structs, deletions }
}
