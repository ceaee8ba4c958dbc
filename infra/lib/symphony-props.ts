import type { RemovalPolicy } from 'aws-cdk-lib'
import type * as acm from 'aws-cdk-lib/aws-certificatemanager'
import type * as ec2 from 'aws-cdk-lib/aws-ec2'
import type * as ecs from 'aws-cdk-lib/aws-ecs'
import type { ServerSettings } from './server-settings.js'
import {
  type CpuArchitectureName,
  type JournalSettings,
  MEMORYDB_JOURNAL,
  POSTGRES_VERSION,
  SIZES,
  type SizeName,
} from './sizes.js'

/** The sync tasks' size and count. */
export interface SyncSize {
  /** CPU units: 256, 512 or 1024 (one Node process uses one core). */
  cpu: number
  /** Fargate's allowed memory for that CPU. */
  memoryMiB: number
  minTasks: number
  maxTasks: number
}

export interface DatabaseSize {
  /** Without the `db.` prefix, such as `t4g.micro`. */
  instanceType: string
  multiAz: boolean
  /** Allocated at creation; RDS grows it up to 4× by itself. */
  storageGiB: number
  /**
   * The Postgres 16 minor version, such as `16.13` (the default). RDS applies later minors itself;
   * an existing instance that runs a later one needs it set here, as CloudFormation cannot go back.
   */
  engineVersion: string
}

export interface RedisSize {
  /** Such as `cache.t4g.micro`. */
  nodeType: string
  /** Read replicas in another zone; one or more turns on automatic failover. */
  replicas: number
}

/** The journal on MemoryDB: each field left out takes `MEMORYDB_JOURNAL`'s. */
export interface MemoryDbJournalProps {
  store: 'memorydb'
  nodeType?: string
  shards?: number
  replicas?: number
}

/**
 * Where the parts go in `vpc`. Each left out: the subnets of that type (public, private with
 * egress, isolated), as in the VPC the construct makes itself.
 */
export interface SymphonySubnets {
  /** The internet-facing load balancer. */
  public?: ec2.SubnetSelection
  /** The sync, dashboard and load-agent tasks: they need a route out (NAT, or endpoints). */
  tasks?: ec2.SubnetSelection
  /** Redis, the MemoryDB journal and Postgres: no route to the internet needed. */
  data?: ec2.SubnetSelection
}

/**
 * Images built elsewhere (`ecs.ContainerImage.fromEcrRepository`, `fromRegistry`), each for the
 * tasks' `cpuArchitecture`. Left out: built by `cdk deploy` from this repository's
 * `infra/Dockerfile`, which works only from a checkout of the repository.
 */
export interface SymphonyImages {
  sync?: ecs.ContainerImage
  dashboard?: ecs.ContainerImage
  /** Only with `loadAgents`. */
  loadAgent?: ecs.ContainerImage
}

/** Everything a `Symphony` construct takes; every field has a default. */
export interface SymphonyProps {
  /** The preset each size below starts from (docs/deploy.md's cost table). Default `small`. */
  size?: SizeName
  /** Overrides the preset's sync tasks: CPU, memory, autoscaling floor and ceiling. */
  sync?: Partial<SyncSize>
  /** The dashboard task and who reaches it (see `dashboardAllowedCidr` in docs/deploy.md). */
  dashboard?: {
    cpu?: number
    memoryMiB?: number
    /** Who may open the dashboard's listener; unset, nobody from the internet (SSM port forwarding). */
    allowedCidr?: string
    /** More `Host` names it answers, comma-separated; `*`: any. */
    allowedHosts?: string
  }
  /**
   * Overrides the preset's ElastiCache Redis, which holds the update journal. Not with the journal on
   * MemoryDB: then there is no ElastiCache.
   */
  redis?: Partial<RedisSize>
  /** `{ store: 'memorydb' }`: the journal on a MemoryDB cluster instead of ElastiCache. Default: ElastiCache. */
  journal?: { store: 'elasticache' } | MemoryDbJournalProps
  /** Overrides the preset's RDS Postgres (the dashboard's metadata). */
  database?: Partial<DatabaseSize>
  /** An existing VPC to deploy into; unset, the construct makes one over two zones. */
  vpc?: ec2.IVpc
  /** Which of `vpc`'s subnets each part uses. */
  subnets?: SymphonySubnets
  /** NAT gateways of the VPC the construct makes (1 or 2); not with `vpc`. */
  natGateways?: number
  /** HTTPS (443, and 8443 for the dashboard) with this certificate; plain HTTP without one. */
  certificate?: acm.ICertificate
  /** The name clients use (a DNS record you point at the load balancer); needs `certificate`. */
  domainName?: string
  /** Where the alarms' SNS topic sends email (AWS asks the address to confirm). */
  alarmEmail?: string
  /** Tags on every resource of the construct. */
  tags?: Record<string, string>
  /**
   * What deleting the construct (or its stack) does to the data: the buckets, the database, Redis,
   * the journal and the log groups. `DESTROY`: all deleted, buckets emptied first. `RETAIN`: all
   * kept, the database protected from deletion. `SNAPSHOT`: a final snapshot of the database and
   * Redis, the rest kept. Unset: buckets and logs kept, a final database snapshot (deletion
   * protection on), Redis deleted (the servers save every room to S3 when they stop). The registry
   * table holds only leases and is always deleted.
   */
  removalPolicy?: RemovalPolicy
  /** Prebuilt images instead of building them at deploy time. */
  images?: SymphonyImages
  /** Verify room tokens against this JWKS instead of a generated HS256 secret. */
  authJwksUrl?: string
  /** The servers' WEBHOOK_URL; its signing key is generated in Secrets Manager. */
  webhookUrl?: string
  /** More of the sync server's settings (limits, timeouts, LOG_LEVEL…); see docs/deploy.md#server-settings. */
  serverSettings?: ServerSettings
  /** Browser origins allowed to open a WebSocket (ALLOWED_ORIGINS), comma-separated; unset: any. */
  allowedOrigins?: string
  /** The load agents' task definition, security group and run policy, for `symphony-loadtest ecs`. */
  loadAgents?: boolean
  /** The servers' SIGTERM drain (5-110 s, default 25): the deregistration delay and stop timeout follow it. */
  shutdownTimeoutSeconds?: number
  /** Every task's CPU and image platform; `arm64` runs on Graviton. Default `x86_64`. */
  cpuArchitecture?: CpuArchitectureName
  /** Which build the tasks run (SYMPHONY_COMMIT, in `symphony_build_info`). */
  commit?: string
  /**
   * Names the deployment's named things: secrets (`<name>/api-secret`), alarms, the metrics
   * namespace (`Symphony/<name>`), the MemoryDB cluster. Default: the stack's name. Two Symphony
   * constructs in one stack need different names.
   */
  name?: string
  /** The CloudFormation outputs (URLs, secret names, `symphony-loadtest ecs` values). Default true. */
  outputs?: boolean
}

/** A prop out of range: `prop` is its path, such as `sync.maxTasks`. */
export class SymphonyPropsError extends Error {
  readonly code = 'INVALID_SYMPHONY_PROPS'
  constructor(
    readonly prop: string,
    readonly detail: string,
  ) {
    super(`Symphony ${prop}: ${detail}`)
    this.name = 'SymphonyPropsError'
  }
}

/** Every size, the preset's where the props leave one out. */
export interface ResolvedSizes {
  size: SizeName
  sync: SyncSize
  dashboard: { cpu: number; memoryMiB: number }
  /** Unset with the journal on MemoryDB: no ElastiCache is made. */
  redis: RedisSize | undefined
  journal: JournalSettings
  database: DatabaseSize
  natGateways: number
}

/** Fills each size from the preset and checks it; throws `SymphonyPropsError`. */
export function resolveSizes(props: SymphonyProps): ResolvedSizes {
  const size = props.size ?? 'small'
  const preset = SIZES[size]
  if (!preset) throw new SymphonyPropsError('size', 'must be small, medium or large')
  const sync = props.sync ?? {}
  const cpu = sync.cpu ?? preset.sync.cpu
  if (![256, 512, 1024].includes(cpu)) {
    throw new SymphonyPropsError('sync.cpu', 'must be 256, 512 or 1024 (one Node process uses one core)')
  }
  const memoryMiB = sync.memoryMiB ?? (sync.cpu ? cpu * 2 : preset.sync.memoryMiB)
  checkFargateMemory('sync.memoryMiB', cpu, memoryMiB)
  const minTasks = count('sync.minTasks', sync.minTasks ?? preset.sync.minTasks, 1, 1000)
  const maxTasks = count('sync.maxTasks', sync.maxTasks ?? Math.max(preset.sync.maxTasks, minTasks), 1, 1000)
  if (maxTasks < minTasks)
    throw new SymphonyPropsError('sync.maxTasks', `must be at least minTasks (${minTasks})`)
  const dashboard = { cpu: props.dashboard?.cpu ?? 256, memoryMiB: props.dashboard?.memoryMiB ?? 512 }
  checkFargateMemory('dashboard.memoryMiB', dashboard.cpu, dashboard.memoryMiB)
  const journal = props.journal
  const redisSet = Object.values(props.redis ?? {}).some((value) => value !== undefined)
  if (journal?.store === 'memorydb' && redisSet) {
    throw new SymphonyPropsError(
      'redis',
      'only with the journal on ElastiCache (with MemoryDB there is none)',
    )
  }
  return {
    size,
    sync: { cpu, memoryMiB, minTasks, maxTasks },
    dashboard,
    redis:
      journal?.store === 'memorydb'
        ? undefined
        : {
            nodeType: props.redis?.nodeType ?? preset.redis.nodeType,
            replicas: count('redis.replicas', props.redis?.replicas ?? preset.redis.replicas, 0, 5),
          },
    journal:
      journal?.store === 'memorydb'
        ? {
            store: 'memorydb',
            nodeType: journal.nodeType ?? MEMORYDB_JOURNAL.nodeType,
            shards: count('journal.shards', journal.shards ?? MEMORYDB_JOURNAL.shards, 1, 500),
            replicas: count('journal.replicas', journal.replicas ?? MEMORYDB_JOURNAL.replicas, 1, 5),
          }
        : { store: 'elasticache' },
    database: {
      instanceType: props.database?.instanceType ?? preset.database.instanceType,
      multiAz: props.database?.multiAz ?? preset.database.multiAz,
      storageGiB: count(
        'database.storageGiB',
        props.database?.storageGiB ?? preset.database.storageGiB,
        20,
        65536,
      ),
      engineVersion: postgresVersion(props.database?.engineVersion ?? POSTGRES_VERSION),
    },
    natGateways: count('natGateways', props.natGateways ?? preset.natGateways, 1, 2),
  }
}

function postgresVersion(version: string): string {
  if (!/^16\.\d{1,3}$/.test(version)) {
    throw new SymphonyPropsError('database.engineVersion', 'must be 16.<minor>, such as 16.13')
  }
  return version
}

function count(prop: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SymphonyPropsError(prop, `must be a whole number from ${min} to ${max}`)
  }
  return value
}

/** Fargate's allowed memory for each CPU size, in MiB. */
function checkFargateMemory(prop: string, cpu: number, memoryMiB: number): void {
  const [min, max] = cpu === 256 ? [512, 2048] : cpu === 512 ? [1024, 4096] : [2048, 8192]
  if (memoryMiB < min || memoryMiB > max || (memoryMiB % 1024 !== 0 && memoryMiB !== 512)) {
    throw new SymphonyPropsError(prop, `Fargate allows ${min}–${max} MiB in 1024 steps for ${cpu} CPU units`)
  }
}
