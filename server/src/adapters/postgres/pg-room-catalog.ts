import type { Pool } from 'pg'
import { ServerBusyError } from '../../errors.js'
import type { CatalogPage, CatalogQuery, RoomCatalog } from '../../ports/room-catalog.js'
import { LIVE_SESSIONS } from './live-sessions.js'

/**
 * Listings a server runs at once. The pool (`createPool`: 4 connections) is shared with the
 * metadata writes; past this a listing is refused (`ServerBusyError`) rather than queued, so a
 * backend that lists in a tight loop never holds the writes up.
 */
export const MAX_CONCURRENT_LISTINGS = 2

/** The highest code point: nothing sorts after a name made of it. */
const LAST_CODE_POINT = 0x10ffff

/**
 * The rooms table, read page by page in name order: a page is a range of the `rooms_name_c`
 * index (names in byte order, which for UTF-8 is code point order, whatever the database's
 * collation), so it costs its own rows, never the rows before it, and a room added or removed
 * while a client pages shifts nothing else (keyset paging, the cursor being the last name).
 */
export class PgRoomCatalog implements RoomCatalog {
  #running = 0

  /** `database` resolves once the schema is migrated. */
  constructor(private readonly database: () => Promise<Pool>) {}

  async list({ prefix, after, limit }: CatalogQuery): Promise<CatalogPage> {
    if (this.#running >= MAX_CONCURRENT_LISTINGS) {
      throw new ServerBusyError(`${MAX_CONCURRENT_LISTINGS} room listings are running; try again`)
    }
    this.#running++
    try {
      const pool = await this.database()
      const params: unknown[] = []
      const bound = (value: string) => `$${params.push(value)}`
      const name = 'r.name COLLATE "C"'
      const where = [`${name} >= ${bound(prefix)}`]
      const end = prefixEnd(prefix)
      if (end !== null) where.push(`${name} < ${bound(end)}`)
      if (after !== null) where.push(`${name} > ${bound(after)}`)
      const { rows } = await pool.query<{
        name: string
        bytes: number
        connections: number
        updatedAt: Date | null
      }>(
        `WITH page AS (
           SELECT r.name, r.bytes, r.changed_at FROM rooms r WHERE ${where.join(' AND ')}
           ORDER BY ${name} LIMIT ${limit + 1})
         SELECT p.name, p.bytes::float8 AS bytes,
           (SELECT count(*)::int FROM (${LIVE_SESSIONS} AND s.room = p.name) live) AS connections,
           p.changed_at AS "updatedAt"
         FROM page p ORDER BY p.name COLLATE "C"`,
        params,
      )
      return { rooms: rows.slice(0, limit), more: rows.length > limit }
    } finally {
      this.#running--
    }
  }
}

/**
 * The first string after every string starting with `prefix`, in code point order: its last
 * code point below U+10FFFF raised by one (past the surrogates), what follows it dropped. Null
 * when there is none (the prefix is empty, or all U+10FFFF): then every later name matches.
 */
export function prefixEnd(prefix: string): string | null {
  const points = [...prefix].map((c) => c.codePointAt(0) as number)
  while (points.length > 0) {
    const last = points.pop() as number
    if (last < LAST_CODE_POINT) {
      points.push(last + 1 === 0xd800 ? 0xe000 : last + 1)
      return String.fromCodePoint(...points)
    }
  }
  return null
}
