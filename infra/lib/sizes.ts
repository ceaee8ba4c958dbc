/** The size presets and the journal's choices: what `SymphonyProps` and the app's context share. */

export type CpuArchitectureName = 'x86_64' | 'arm64'

/**
 * `elasticache`: the journal on an ElastiCache Redis, whose primary's loss can take the acknowledged
 * updates since each room's last snapshot with it. `memorydb`: on a MemoryDB cluster instead, which
 * acknowledges a write only once its multi-AZ transaction log holds it; no ElastiCache is made then,
 * since the journal is all the servers keep in Redis.
 */
export type JournalSettings =
  | { store: 'elasticache' }
  | { store: 'memorydb'; nodeType: string; shards: number; replicas: number }

/** The MemoryDB journal's defaults: one shard is plenty for appends of small updates. */
export const MEMORYDB_JOURNAL = { nodeType: 'db.t4g.small', shards: 1, replicas: 1 } as const

export type SizeName = keyof typeof SIZES

/**
 * Presets behind the cost table in docs/deploy.md. One Node process uses one core, so a sync task never
 * gets more than one vCPU: bigger deployments run more tasks, not bigger ones.
 */
export const SIZES = {
  small: {
    sync: { cpu: 512, memoryMiB: 1024, minTasks: 1, maxTasks: 3 },
    redis: { nodeType: 'cache.t4g.micro', replicas: 0 },
    database: { instanceType: 't4g.micro', multiAz: false, storageGiB: 20 },
    natGateways: 1,
  },
  medium: {
    sync: { cpu: 1024, memoryMiB: 2048, minTasks: 2, maxTasks: 8 },
    redis: { nodeType: 'cache.t4g.small', replicas: 1 },
    database: { instanceType: 't4g.small', multiAz: true, storageGiB: 50 },
    natGateways: 2,
  },
  large: {
    sync: { cpu: 1024, memoryMiB: 2048, minTasks: 6, maxTasks: 40 },
    redis: { nodeType: 'cache.m7g.large', replicas: 1 },
    database: { instanceType: 'm7g.large', multiAz: true, storageGiB: 100 },
    natGateways: 2,
  },
} as const

/**
 * A minor version RDS still creates instances at: the bare major "16" is deprecated for new
 * instances (cfn-lint W3691). RDS applies later minors itself in the maintenance window (automatic
 * minor upgrades stay on), so this only says where a new database starts.
 */
export const POSTGRES_VERSION = '16.13'
