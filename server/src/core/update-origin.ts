import type { RoomMember } from './room-member.js'

/**
 * Who an update applied through `Room.applyUpdate` comes from. Every origin but a peer's gets
 * every check a client's update gets; `rest` and `restore` write under `API_SUBJECT`.
 */
export type UpdateOrigin =
  | { readonly kind: 'client'; readonly connection: RoomMember }
  | { readonly kind: 'rest' }
  | { readonly kind: 'restore'; readonly version: string }
  | { readonly kind: 'peer' }

/** What the checks of a write need of its writer: whom its client ids are bound to, and whether it may write. */
export type Writer = Pick<RoomMember, 'identity' | 'canWrite'>
