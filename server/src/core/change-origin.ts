import type { RoomMember } from './room-member.js'
import type { ChangeOrigin } from './server-events.js'
import type { Writer } from './update-origin.js'

/** A writer that is no connection (the REST API, a restore): it says which origin it is. */
export type OriginWriter = Writer & { readonly changeOrigin: ChangeOrigin }

export const PEER_ORIGIN: ChangeOrigin = { kind: 'peer' }

/** The origin `document.changed` reports for an update of `writer`'s. */
export function changeOriginOf(writer: Writer | OriginWriter): ChangeOrigin {
  if ('changeOrigin' in writer) return writer.changeOrigin
  // Every other writer is a client's connection (`Room.#dispatch` passes its member).
  const { id, identity } = writer as RoomMember
  return { kind: 'client', connectionId: id, userId: identity.userId, name: identity.name }
}
