import { encodeMetadataNotification, METADATA_NOTIFY_CHANNEL } from '@symphony/client/wire'
import type { PoolClient } from 'pg'
import type { MetadataEvent } from '../../ports/metadata-sink.js'

/** An event and when it happened (the write may come seconds later). */
export interface TimedEvent {
  event: MetadataEvent
  at: Date
}

/**
 * Events after which a room has a row. The others (a close, an unload) only update a row that is
 * there, so the last goodbyes of a deleted room do not write it back.
 */
const CREATING: ReadonlySet<MetadataEvent['type']> = new Set([
  'room-loaded',
  'room-sample',
  'connection-opened',
])

/** Says this server is alive; every batch runs it, and a quiet flush runs it alone. */
export const HEARTBEAT_SQL = 'UPDATE servers SET last_heartbeat_at = now() WHERE id = $1'

/** An event of one type, with when it happened. */
type Timed<T extends MetadataEvent['type']> = Extract<MetadataEvent, { type: T }> & { at: Date }

/** What a batch says of a room: its newest size, its last activity and its latest change. */
interface RoomNews {
  bytes: number | null
  at: Date
  changedAt: number | null
}

/**
 * Writes one batch in the caller's transaction with a handful of set-based statements (never
 * one per event), then notifies listeners.
 */
export async function writeBatch(
  db: PoolClient,
  serverId: string,
  everything: readonly TimedEvent[],
): Promise<void> {
  // A deleted room's rows go, with what the batch says of it before the deletion.
  const deletedAt = new Map<string, number>()
  for (const [index, { event }] of everything.entries()) {
    if (event.type === 'room-deleted') deletedAt.set(event.room, index)
  }
  const batch = everything.filter(
    ({ event }, index) => event.type !== 'room-deleted' && index > (deletedAt.get(event.room) ?? -1),
  )
  if (deletedAt.size > 0) await deleteRooms(db, [...deletedAt.keys()].sort())
  const of = <T extends MetadataEvent['type']>(type: T): Timed<T>[] =>
    batch.flatMap(({ event, at }) => (event.type === type ? [{ ...(event as Timed<T>), at }] : []))
  // The newest size, activity and change per room.
  const rooms = new Map<string, RoomNews>()
  const created = new Set<string>()
  const holders = new Map<string, { held: boolean; at: Date }>()
  for (const { event, at } of batch) {
    const before = rooms.get(event.room)
    const bytes = 'bytes' in event ? event.bytes : (before?.bytes ?? null)
    const changedAt = Math.max(
      ('changedAt' in event ? event.changedAt : undefined) ?? -1,
      before?.changedAt ?? -1,
    )
    rooms.set(event.room, { bytes, at, changedAt: changedAt < 0 ? null : changedAt })
    if (CREATING.has(event.type)) created.add(event.room)
    if (event.type === 'room-loaded') holders.set(event.room, { held: true, at })
    if (event.type === 'room-unloaded') holders.set(event.room, { held: false, at })
  }

  await db.query(HEARTBEAT_SQL, [serverId])
  if (rooms.size > 0) await writeRooms(db, rooms, created)
  if (holders.size > 0) await writeHolders(db, serverId, holders)
  await writeSessions(db, serverId, of('connection-opened'), of('connection-closed'))
  await writeSamples(db, serverId, of('room-sample'))
  const payload = encodeMetadataNotification({
    server: serverId,
    rooms: [...new Set([...rooms.keys(), ...deletedAt.keys()])],
  })
  await db.query('SELECT pg_notify($1, $2)', [METADATA_NOTIFY_CHANNEL, payload])
}

async function deleteRooms(db: PoolClient, deleted: string[]): Promise<void> {
  for (const table of ['connection_sessions', 'room_samples', 'room_holders']) {
    await db.query(`DELETE FROM ${table} WHERE room = ANY($1)`, [deleted])
  }
  await db.query('DELETE FROM rooms WHERE name = ANY($1)', [deleted])
}

async function writeRooms(db: PoolClient, rooms: Map<string, RoomNews>, created: Set<string>): Promise<void> {
  // Sorted, so two servers touching the same rooms lock their rows in the same order.
  const names = [...rooms.keys()].sort()
  const bytes = names.map((n) => rooms.get(n)?.bytes ?? null)
  const creating = names.filter((n) => created.has(n))
  await db.query(
    `INSERT INTO rooms (name, bytes, last_active_at)
     SELECT name, coalesce(bytes, 0), at FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS t(name, bytes, at)
     ON CONFLICT (name) DO NOTHING`,
    [creating, creating.map((n) => rooms.get(n)?.bytes ?? null), creating.map((n) => rooms.get(n)?.at)],
  )
  await db.query(
    `UPDATE rooms SET last_active_at = greatest(rooms.last_active_at, t.at)
     FROM unnest($1::text[], $2::timestamptz[]) AS t(name, at) WHERE rooms.name = t.name`,
    [names, names.map((n) => rooms.get(n)?.at)],
  )
  // Only events that know the size change it: a batch of joins and leaves keeps the last one.
  await db.query(
    `UPDATE rooms SET bytes = t.bytes FROM unnest($1::text[], $2::bigint[]) AS t(name, bytes)
     WHERE rooms.name = t.name AND t.bytes IS NOT NULL`,
    [names, bytes],
  )
  // Servers holding the same room each report their own clients' changes: the latest wins.
  const changed = names.filter((n) => rooms.get(n)?.changedAt != null)
  if (changed.length > 0) {
    await db.query(
      `UPDATE rooms SET changed_at = greatest(rooms.changed_at, t.changed_at)
       FROM unnest($1::text[], $2::timestamptz[]) AS t(name, changed_at) WHERE rooms.name = t.name`,
      [changed, changed.map((n) => new Date(rooms.get(n)?.changedAt as number))],
    )
  }
}

async function writeHolders(
  db: PoolClient,
  serverId: string,
  holders: Map<string, { held: boolean; at: Date }>,
): Promise<void> {
  const held = [...holders].filter(([, h]) => h.held)
  const released = [...holders].filter(([, h]) => !h.held).map(([room]) => room)
  if (held.length > 0) {
    await db.query(
      `INSERT INTO room_holders (room, server_id, since)
       SELECT room, $1, since FROM unnest($2::text[], $3::timestamptz[]) AS t(room, since)
       ON CONFLICT DO NOTHING`,
      [serverId, held.map(([room]) => room), held.map(([, h]) => h.at)],
    )
  }
  if (released.length > 0) {
    await db.query('DELETE FROM room_holders WHERE server_id = $1 AND room = ANY($2)', [serverId, released])
  }
  await db.query(
    `UPDATE rooms SET active = EXISTS (SELECT 1 FROM room_holders h WHERE h.room = rooms.name)
     WHERE name = ANY($1)`,
    [[...holders.keys()]],
  )
}

async function writeSessions(
  db: PoolClient,
  serverId: string,
  opened: Timed<'connection-opened'>[],
  closed: Timed<'connection-closed'>[],
): Promise<void> {
  if (opened.length > 0) {
    await db.query(
      `INSERT INTO connection_sessions (id, room, server_id, user_id, user_name, user_info, opened_at)
       SELECT id, room, $1, user_id, user_name, user_info::jsonb, opened_at
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
         AS t(id, room, user_id, user_name, user_info, opened_at)
       ON CONFLICT (id) DO NOTHING`,
      [
        serverId,
        opened.map((e) => e.connectionId),
        opened.map((e) => e.room),
        opened.map((e) => e.userId),
        opened.map((e) => e.userName),
        opened.map((e) => (e.userInfo ? JSON.stringify(e.userInfo) : null)),
        opened.map((e) => e.at),
      ],
    )
  }
  if (closed.length > 0) {
    await db.query(
      `UPDATE connection_sessions s SET closed_at = t.closed_at
       FROM unnest($1::text[], $2::timestamptz[]) AS t(id, closed_at)
       WHERE s.id = t.id AND s.closed_at IS NULL`,
      [closed.map((e) => e.connectionId), closed.map((e) => e.at)],
    )
  }
}

async function writeSamples(
  db: PoolClient,
  serverId: string,
  samples: Timed<'room-sample'>[],
): Promise<void> {
  if (samples.length === 0) return
  await db.query(
    `INSERT INTO room_samples (room, server_id, at, connections, bytes)
     SELECT room, $1, at, connections, bytes
     FROM unnest($2::text[], $3::timestamptz[], $4::int[], $5::bigint[]) AS t(room, at, connections, bytes)
     ON CONFLICT DO NOTHING`,
    [
      serverId,
      samples.map((e) => e.room),
      samples.map((e) => e.at),
      samples.map((e) => e.connections),
      samples.map((e) => e.bytes),
    ],
  )
}
