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

/** The origins that write as no connection, under `API_SUBJECT`. */
export type ApiOrigin = Extract<UpdateOrigin, { kind: 'rest' | 'restore' }>

/**
 * What the checks of a write need of its writer: whom its client ids are bound to, and whether it
 * may write; a connection also has its `id`, a write of the REST API or a restore its `origin`.
 */
export type Writer = Pick<RoomMember, 'identity' | 'canWrite'> &
  Partial<Pick<RoomMember, 'pacedAs'>> & {
    readonly id?: string
    readonly origin?: ApiOrigin
  }
