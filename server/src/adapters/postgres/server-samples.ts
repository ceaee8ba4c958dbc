import { encodeMetadataNotification, METADATA_NOTIFY_CHANNEL } from '@symphony/client/wire'
import type { Pool, PoolClient } from 'pg'
import type { ServerSample } from '../../ports/metadata-sink.js'

/**
 * One `server_samples` row: the load at `at`, and what the server did in the `seconds` before
 * (the running totals of a `ServerSample` as differences over that interval).
 */
export interface ServerSampleRow extends Omit<ServerSample, 'cpuMicros'> {
  at: Date
  seconds: number
  /** CPU time used per second of wall time over the interval: 1 is one core fully busy. */
  cpu: number
}

const TOTALS = ['messagesIn', 'messagesOut', 'bytesIn', 'bytesOut', 'errors'] as const

/**
 * Turns successive readings of running totals into per-interval rows. The first reading is the
 * baseline and makes no row; a counter that went backwards (it cannot, unless reset) counts 0.
 */
export class SampleDeltas {
  #previous: { at: number; sample: ServerSample } | null = null

  next(sample: ServerSample, at: Date): ServerSampleRow | null {
    const previous = this.#previous
    this.#previous = { at: at.getTime(), sample }
    if (!previous) return null
    const seconds = (at.getTime() - previous.at) / 1000
    if (seconds <= 0) return null
    const delta = (key: keyof ServerSample) => Math.max(0, sample[key] - previous.sample[key])
    const row: ServerSampleRow = {
      at,
      seconds,
      cpu: delta('cpuMicros') / 1e6 / seconds,
      rssBytes: sample.rssBytes,
      heapBytes: sample.heapBytes,
      connections: sample.connections,
      rooms: sample.rooms,
      messagesIn: 0,
      messagesOut: 0,
      bytesIn: 0,
      bytesOut: 0,
      errors: 0,
    }
    for (const key of TOTALS) row[key] = delta(key)
    return row
  }
}

/** Writes `rows` in one statement, then tells the dashboard (payload `{ server, samples }`). */
export async function insertServerSamples(
  db: Pool | PoolClient,
  serverId: string,
  rows: readonly ServerSampleRow[],
): Promise<void> {
  if (rows.length === 0) return
  const column = <K extends keyof ServerSampleRow>(key: K) => rows.map((row) => row[key])
  await db.query(
    `INSERT INTO server_samples (server_id, at, seconds, cpu, rss_bytes, heap_bytes, connections, rooms,
       messages_in, messages_out, bytes_in, bytes_out, errors)
     SELECT $1, * FROM unnest($2::timestamptz[], $3::real[], $4::real[], $5::bigint[], $6::bigint[],
       $7::int[], $8::int[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::int[])
     ON CONFLICT DO NOTHING`,
    [
      serverId,
      column('at'),
      column('seconds'),
      column('cpu'),
      column('rssBytes'),
      column('heapBytes'),
      column('connections'),
      column('rooms'),
      column('messagesIn'),
      column('messagesOut'),
      column('bytesIn'),
      column('bytesOut'),
      column('errors'),
    ],
  )
  await db.query('SELECT pg_notify($1, $2)', [
    METADATA_NOTIFY_CHANNEL,
    encodeMetadataNotification({ server: serverId, rooms: [], samples: rows.length }),
  ])
}
