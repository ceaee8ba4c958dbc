import type { Pool } from 'pg'

/** Any constant (not the migrations'): one server prunes at a time; the others skip that round. */
const PRUNE_LOCK = 7_230_412

/** Servers whose last heartbeat is older than the cutoff: gone for good. */
const GONE_SERVERS = 'SELECT id FROM servers WHERE last_heartbeat_at < $1'

/**
 * What retention deletes, in this order, each as "rows of `table` matching `where`" ($1: the
 * cutoff). Samples and closed sessions age out; a server gone for the whole period takes its
 * sessions left open by a crash and its room holdings with it, and then its own row.
 */
const RULES: readonly { name: string; table: string; where: string }[] = [
  { name: 'server_samples', table: 'server_samples', where: 'at < $1' },
  { name: 'room_samples', table: 'room_samples', where: 'at < $1' },
  { name: 'closed_sessions', table: 'connection_sessions', where: 'closed_at < $1' },
  {
    name: 'sessions_of_gone_servers',
    table: 'connection_sessions',
    where: `closed_at IS NULL AND server_id IN (${GONE_SERVERS})`,
  },
  { name: 'holders_of_gone_servers', table: 'room_holders', where: `server_id IN (${GONE_SERVERS})` },
  {
    name: 'gone_servers',
    table: 'servers',
    where: `last_heartbeat_at < $1 AND NOT EXISTS (SELECT 1 FROM connection_sessions s WHERE s.server_id = servers.id)`,
  },
]

export interface PruneOptions {
  /** Rows older than this go. */
  before: Date
  /** Rows per DELETE: each statement is short, so no prune holds locks for long. Default 5 000. */
  batchSize?: number
  /** DELETEs per run, over all rules; the rest waits for the next run. Default 200. */
  maxBatches?: number
  /** Checked between DELETEs: true stops the run early (the server is shutting down). */
  stop?: () => boolean
}

/** Rows deleted, per rule. */
export type PruneResult = Record<string, number>

/**
 * Deletes metadata older than `before` in bounded batches, each its own statement. Returns the
 * rows deleted per rule, or null when another server holds the prune lock (it is pruning now).
 */
export async function pruneMetadata(pool: Pool, options: PruneOptions): Promise<PruneResult | null> {
  const batchSize = options.batchSize ?? 5_000
  let batchesLeft = options.maxBatches ?? 200
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      PRUNE_LOCK,
    ])
    if (!rows[0]?.locked) return null
    try {
      const result: PruneResult = {}
      for (const rule of RULES) {
        let count = 0
        result[rule.name] = count
        for (;;) {
          if (batchesLeft <= 0 || options.stop?.()) return result
          batchesLeft--
          const deleted = await client.query(
            `DELETE FROM ${rule.table} WHERE ctid = ANY(ARRAY(
               SELECT ctid FROM ${rule.table} WHERE ${rule.where} LIMIT $2))`,
            [options.before, batchSize],
          )
          count += deleted.rowCount ?? 0
          result[rule.name] = count
          if ((deleted.rowCount ?? 0) < batchSize) break
        }
      }
      return result
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRUNE_LOCK])
    }
  } catch (error) {
    broken = error as Error // a connection in an unknown state (maybe still locked) is not pooled
    throw error
  } finally {
    client.release(broken)
  }
}
