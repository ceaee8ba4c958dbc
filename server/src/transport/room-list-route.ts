import { ROOM_PREFIX_PATTERN } from '@symphony/client/wire'
import { ServerBusyError } from '../errors.js'
import type { Logger } from '../logger.js'
import type { RoomCatalog } from '../ports/room-catalog.js'
import { ApiRefusal } from './api-refusal.js'

/** Rooms a listing answers when the request names no `limit`, or the maximum if lower. */
export const DEFAULT_LIST_LIMIT = 100

/** A cursor: base64url of a room name (at most 128 characters of at most 4 bytes each). */
const CURSOR = /^[A-Za-z0-9_-]{1,683}$/
const LIMIT = /^[1-9][0-9]{0,8}$/
const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** `nextCursor` for a page ending at `name`: opaque to clients, the name itself to the server. */
export function cursorAfter(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url')
}

export interface RoomListDeps {
  /** Null when the server keeps no metadata (`DATABASE_URL=none`). */
  catalog: RoomCatalog | null
  /** The largest `limit` a request may ask for (`API_MAX_LIST_LIMIT`). */
  maxLimit: number
  logger: Logger
}

/**
 * `GET /api/v1/rooms?prefix=&limit=&cursor=`: a page of rooms in name order, from the metadata
 * store, as `{ rooms: [{ name, bytes, connections, updatedAt }], nextCursor }` (null on the last
 * page). A cursor is the last name of the previous page, so rooms created or deleted while a
 * client pages neither repeat nor hide the others.
 */
export async function listRooms(deps: RoomListDeps, query: URLSearchParams): Promise<unknown> {
  const prefix = single(query, 'prefix', 'PREFIX_INVALID') ?? ''
  if (!ROOM_PREFIX_PATTERN.test(prefix)) {
    throw new ApiRefusal(
      400,
      'PREFIX_INVALID',
      'prefix must be at most 128 characters, without control characters',
    )
  }
  const limitText = single(query, 'limit', 'LIMIT_INVALID')
  const limit = limitText === null ? Math.min(DEFAULT_LIST_LIMIT, deps.maxLimit) : Number(limitText)
  if (limitText !== null && (!LIMIT.test(limitText) || limit > deps.maxLimit)) {
    throw new ApiRefusal(400, 'LIMIT_INVALID', `limit must be a whole number from 1 to ${deps.maxLimit}`)
  }
  const cursor = single(query, 'cursor', 'CURSOR_INVALID')
  const after = cursor === null ? null : nameOf(cursor)
  if (!deps.catalog) {
    throw new ApiRefusal(
      501,
      'METADATA_OFF',
      'listing rooms reads the metadata database, which this server does not keep (DATABASE_URL=none)',
    )
  }
  const page = await deps.catalog.list({ prefix, after, limit }).catch((error: unknown) => {
    if (error instanceof ServerBusyError) throw error
    deps.logger.warn({ err: error }, 'room listing failed: the metadata database did not answer')
    throw new ApiRefusal(503, 'METADATA_UNAVAILABLE', 'the metadata database did not answer; try again')
  })
  const last = page.rooms.at(-1)
  return {
    rooms: page.rooms.map((room) => ({ ...room, updatedAt: room.updatedAt?.toISOString() ?? null })),
    nextCursor: page.more && last ? cursorAfter(last.name) : null,
  }
}

/** The parameter's value, or null if absent; given twice, refused. */
export function single(
  query: URLSearchParams,
  key: string,
  code: 'PREFIX_INVALID' | 'LIMIT_INVALID' | 'CURSOR_INVALID',
): string | null {
  const values = query.getAll(key)
  if (values.length > 1) throw new ApiRefusal(400, code, `give ${key} once`)
  return values[0] ?? null
}

/** The room name a cursor stands for; anything `cursorAfter` could not have made is refused. */
function nameOf(cursor: string): string {
  const refusal = new ApiRefusal(400, 'CURSOR_INVALID', 'cursor must be a nextCursor this API gave')
  if (!CURSOR.test(cursor)) throw refusal
  const bytes = Buffer.from(cursor, 'base64url')
  if (bytes.toString('base64url') !== cursor) throw refusal
  let name: string
  try {
    name = UTF8.decode(bytes)
  } catch {
    throw refusal
  }
  if (!ROOM_PREFIX_PATTERN.test(name) || name === '') throw refusal
  return name
}
