import { isValidRoomName, ROOM_NAME_RULE } from '@symphony/client/wire'
import type { Author } from './core/author-binding.js'
import type { DocumentReads } from './core/document-reads.js'
import type { Room } from './core/room.js'
import type { RoomManager } from './core/room-manager.js'
import { serverSender } from './core/server-sender.js'
import { DeadlineError, within } from './deadline.js'
import { ApiRefusal } from './transport/api-refusal.js'
import { holdForApi } from './transport/api-writer.js'

/**
 * One room, from the server's side: what an embedding app gets from `server.room(name)`, and what
 * the REST API and the internal endpoint answer with. Each call holds the room while it runs,
 * loading it first if this server does not hold it (from a peer or the stores, as a joining
 * client's load; up to `joinWaitMs`, then 503 `ROOM_UNAVAILABLE`). Errors carry a `code`: the REST
 * API's error codes (`UPDATE_REFUSED`, `DOCUMENT_TOO_LARGE`, `ROOM_UNAVAILABLE`…).
 */
export interface RoomApi {
  readonly name: string
  /**
   * Applies a Yjs update as the REST API's `POST …/update` does: every check a client's update
   * gets, the app's `beforeApply` (origin `rest`), journaled, sent to every client on every
   * server. Resolves once it is saved (journaled and confirmed, or in a saved snapshot); rejects
   * with 503 `UPDATE_NOT_SAVED` if that takes longer than `apiSaveWaitMs` (it is applied, and
   * saved once the stores answer).
   */
  applyUpdate(update: Uint8Array): Promise<void>
  /** The room's whole state as a Yjs update; with `stateVector`, only what its holder lacks. */
  encodeState(stateVector?: Uint8Array): Promise<Uint8Array>
  /** The document as JSON, as `GET …/document` gives it. */
  toJSON(): Promise<Record<string, unknown>>
  /** The same, as JSON text: read off the event loop, bounded and charged (`DocumentReads`). */
  jsonText(): Promise<string>
  /** Who wrote under each client id (`GET …/authors`). */
  authors(): Promise<Author[]>
  /**
   * Sends `data` (JSON) as a broadcast event to the room's clients that hear events, on every
   * server; its sender's `userId` is `symphony:api`. Never stored.
   */
  broadcast(data: unknown): Promise<void>
  /** Deletes the room everywhere, as `DELETE /api/v1/rooms/{room}` does. */
  delete(): Promise<void>
}

export interface RoomApiDeps {
  manager: RoomManager
  serverId: string
  /** `JOIN_WAIT_MS`: the longest a call waits for the room to load. */
  joinWaitMs: number
  /** `API_SAVE_WAIT_MS`: the longest `applyUpdate` waits for its update to be saved. */
  saveWaitMs: number
  /** Where whole documents are read as JSON. */
  reads: DocumentReads
}

/** The room `name` (checked: 400 `ROOM_NAME_INVALID`) on this server. */
export function roomApi(name: string, deps: RoomApiDeps): RoomApi {
  if (!isValidRoomName(name)) throw new ApiRefusal(400, 'ROOM_NAME_INVALID', ROOM_NAME_RULE)
  const use = async <T>(run: (room: Room) => T | Promise<T>): Promise<T> => {
    const hold = await holdForApi(deps.manager, name, deps.joinWaitMs)
    try {
      return await run(hold.room)
    } finally {
      hold.release()
    }
  }
  const jsonText = () => use((room) => deps.reads.jsonText(room.encodeState(), room.heldBytes))
  return {
    name,
    applyUpdate: (update) =>
      use(async (room) => {
        await room.applyUpdate(update, { kind: 'rest' })
        await savedWithin(room, deps.saveWaitMs)
      }),
    encodeState: (stateVector) =>
      use((room) => (stateVector ? room.encodeDiff(stateVector) : room.encodeState())),
    jsonText,
    toJSON: async () => JSON.parse(await jsonText()),
    authors: () => use((room) => room.authors()),
    broadcast: (data) =>
      use((room) => {
        const payload = new TextEncoder().encode(JSON.stringify(data ?? null))
        room.broadcastEvent(payload, serverSender(deps.serverId))
      }),
    // Held while deleted: this server owns it (or another does, and the hold fails `ROOM_MOVED`).
    delete: () => use(() => deps.manager.delete(name)),
  }
}

/** A 2xx means saved: journaled and confirmed, or in a saved snapshot. */
async function savedWithin(room: Room, saveWaitMs: number): Promise<void> {
  try {
    await within(room.durable(), saveWaitMs, 'saving the update')
  } catch (error) {
    if (!(error instanceof DeadlineError)) throw error
    throw new ApiRefusal(
      503,
      'UPDATE_NOT_SAVED',
      'the update is applied but not saved yet (the journal and snapshot stores are failing); it is saved once they answer, and sending it again is harmless',
    )
  }
}
