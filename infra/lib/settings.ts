import { z } from 'zod'
import { parseServerSettings, type ServerSettings } from './server-settings.js'

/**
 * What a deployment is sized and wired with, read once from CDK context (`-c key=value` or
 * `cdk.json`). A size preset fills every number; any key given on its own overrides its preset.
 */
export interface SymphonySettings {
  stackName: string
  /** Region to deploy to: `region` context, else the CLI's default region, else us-east-1. */
  region: string
  size: SizeName
  sync: { cpu: number; memoryMiB: number; minTasks: number; maxTasks: number }
  /**
   * `allowedCidr` unset: the dashboard's listener takes no traffic from anywhere (SSM port
   * forwarding instead). `allowedHosts`: more `Host` names it answers besides the load balancer's
   * and `domainName` (`*`: any).
   */
  dashboard: {
    cpu: number
    memoryMiB: number
    allowedCidr: string | undefined
    allowedHosts: string | undefined
  }
  redis: { nodeType: string; replicas: number }
  /** Where the update journal lives: beside pub/sub on ElastiCache, or on MemoryDB (see `JournalSettings`). */
  journal: JournalSettings
  database: { instanceType: string; multiAz: boolean; storageGiB: number }
  natGateways: number
  /** HTTPS on the load balancer with this ACM certificate; plain HTTP without it. */
  certificateArn: string | undefined
  /** The name clients use (a DNS record you point at the load balancer), for the output URLs. */
  domainName: string | undefined
  /** Verify tokens against this JWKS instead of a generated HS256 secret. */
  authJwksUrl: string | undefined
  /** Where the servers send room events (WEBHOOK_URL); its signing key is generated in Secrets Manager. */
  webhookUrl: string | undefined
  /** More of the sync server's settings (limits, timeouts, LOG_LEVEL…): see `TUNABLE_SERVER_SETTINGS`. */
  serverSettings: ServerSettings
  /** Browser origins allowed to open a WebSocket (the server's ALLOWED_ORIGINS); unset: any. */
  allowedOrigins: string | undefined
  /** Keep the bucket and a final database snapshot on `cdk destroy` (and block database deletion). */
  retainData: boolean
  /** The load agents' task definition, security group and run policy, for `symphony-loadtest ecs`. */
  loadAgents: boolean
  /** The server's SIGTERM drain; the load balancer's deregistration delay and the stop timeout follow it. */
  shutdownTimeoutSeconds: number
  /** Where the alarms' SNS topic sends email (a subscription AWS asks the address to confirm). */
  alarmEmail: string | undefined
  /** Every task's CPU (and its images' platform): `arm64` runs on Graviton, about 20 % cheaper. */
  cpuArchitecture: CpuArchitectureName
  /** The build's commit, the servers' SYMPHONY_COMMIT (in `symphony_build_info`): `commit` context, else git's HEAD. */
  commit: string | undefined
}

export type CpuArchitectureName = 'x86_64' | 'arm64'

/**
 * `elasticache`: the journal shares pub/sub's Redis, whose primary's loss can take the acknowledged
 * updates since each room's last snapshot with it. `memorydb`: a MemoryDB cluster of its own, which
 * acknowledges a write only once its multi-AZ transaction log holds it.
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

/** Context values from the command line are strings; from cdk.json they may be typed. */
const count = (min: number, max: number) => z.coerce.number().int().min(min).max(max).optional()
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).optional()

const context = z.object({
  stackName: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/, 'must be a CloudFormation stack name')
    .default('Symphony'),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region such as eu-west-1')
    .optional(),
  size: z.enum(['small', 'medium', 'large']).default('small'),
  taskCpu: z.coerce
    .number()
    .refine((v) => [256, 512, 1024].includes(v), 'must be 256, 512 or 1024 (one Node process uses one core)')
    .optional(),
  taskMemoryMiB: count(512, 8192),
  minTasks: count(1, 1000),
  maxTasks: count(1, 1000),
  dashboardAllowedCidr: z.cidrv4('must be an IPv4 CIDR such as 203.0.113.0/24').optional(),
  dashboardAllowedHosts: z
    .string()
    .regex(
      /^(\*|[a-z0-9.-]+(:\d{1,5})?(,\s*[a-z0-9.-]+(:\d{1,5})?)*)$/i,
      'must be * or comma-separated host names such as ops.example.com',
    )
    .optional(),
  redisNodeType: z
    .string()
    .regex(/^cache\.[a-z0-9]+\.[a-z0-9]+$/, 'must be like cache.t4g.micro')
    .optional(),
  redisReplicas: count(0, 5),
  journalStore: z.enum(['elasticache', 'memorydb']).default('elasticache'),
  journalNodeType: z
    .string()
    .regex(/^db\.[a-z0-9]+\.[a-z0-9]+$/, 'must be like db.t4g.small')
    .optional(),
  journalReplicas: count(1, 5),
  dbInstanceType: z
    .string()
    .regex(/^[a-z0-9]+\.[a-z0-9]+$/, 'must be like t4g.micro')
    .optional(),
  dbMultiAz: flag,
  dbStorageGiB: count(20, 65536),
  natGateways: count(1, 2),
  certificateArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/,
      'must be an ACM certificate ARN',
    )
    .optional(),
  domainName: z
    .string()
    .regex(/^([a-z0-9-]+\.)+[a-z]{2,}$/i, 'must be a host name such as collab.example.com')
    .optional(),
  authJwksUrl: z.url({ protocol: /^https$/, error: 'must be an https:// URL' }).optional(),
  webhookUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  allowedOrigins: z
    .string()
    .regex(
      /^https?:\/\/[^/,\s]+(,\s*https?:\/\/[^/,\s]+)*$/,
      'must be comma-separated origins such as https://app.example.com',
    )
    .optional(),
  serverSettings: z.unknown().optional(),
  retainData: flag,
  // Once a standing fleet's size: any number above 0 still means true.
  loadAgents: z
    .union([
      z.boolean(),
      z.enum(['true', 'false']).transform((v) => v === 'true'),
      z.coerce
        .number()
        .int()
        .min(0)
        .transform((v) => v > 0),
    ])
    .optional(),
  loadCoordinatorUrl: z.unknown().optional(),
  shutdownTimeoutSeconds: count(5, 110),
  alarmEmail: z.email('must be an email address such as ops@example.com').optional(),
  commit: z
    .string()
    .regex(/^[\w.+-]{1,64}$/, 'must be a commit id: letters, digits, . _ + -, at most 64')
    .optional(),
  cpuArchitecture: z.enum(['x86_64', 'arm64']).default('x86_64'),
})

/**
 * Reads and checks the context once; throws one clear line naming the key. `defaults` are what the
 * context may leave out: the CLI's region (CDK_DEFAULT_REGION) and the checkout's commit.
 */
export function parseSettings(
  read: (key: string) => unknown,
  defaults: { region?: string | undefined; commit?: string | undefined } = {},
): SymphonySettings {
  const raw = Object.fromEntries(Object.keys(context.shape).map((key) => [key, read(key)]))
  const parsed = context.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`context ${issue?.path.join('.')}: ${issue?.message}`)
  }
  const c = parsed.data
  const serverSettings = parseServerSettings(c.serverSettings)
  const preset = SIZES[c.size]
  const cpu = c.taskCpu ?? preset.sync.cpu
  const memoryMiB = c.taskMemoryMiB ?? (c.taskCpu ? cpu * 2 : preset.sync.memoryMiB)
  checkFargateMemory(cpu, memoryMiB)
  const minTasks = c.minTasks ?? preset.sync.minTasks
  const maxTasks = c.maxTasks ?? Math.max(preset.sync.maxTasks, minTasks)
  if (maxTasks < minTasks) throw new Error(`context maxTasks: must be at least minTasks (${minTasks})`)
  if (c.loadCoordinatorUrl !== undefined) {
    throw new Error(
      'context loadCoordinatorUrl: no longer used: `symphony-loadtest ecs --advertise-url` tells the agents it starts where the coordinator is',
    )
  }
  for (const key of ['journalNodeType', 'journalReplicas'] as const) {
    if (c[key] !== undefined && c.journalStore !== 'memorydb') {
      throw new Error(`context ${key}: only with journalStore=memorydb`)
    }
  }
  if (c.domainName && !c.certificateArn) {
    throw new Error('context domainName: needs certificateArn (a name is only for HTTPS clients)')
  }
  return {
    stackName: c.stackName,
    region: c.region ?? defaults.region ?? 'us-east-1',
    size: c.size,
    sync: { cpu, memoryMiB, minTasks, maxTasks },
    dashboard: {
      cpu: 256,
      memoryMiB: 512,
      allowedCidr: c.dashboardAllowedCidr,
      allowedHosts: c.dashboardAllowedHosts,
    },
    redis: {
      nodeType: c.redisNodeType ?? preset.redis.nodeType,
      replicas: c.redisReplicas ?? preset.redis.replicas,
    },
    journal:
      c.journalStore === 'memorydb'
        ? {
            store: 'memorydb',
            nodeType: c.journalNodeType ?? MEMORYDB_JOURNAL.nodeType,
            shards: MEMORYDB_JOURNAL.shards,
            replicas: c.journalReplicas ?? MEMORYDB_JOURNAL.replicas,
          }
        : { store: 'elasticache' },
    database: {
      instanceType: c.dbInstanceType ?? preset.database.instanceType,
      multiAz: c.dbMultiAz ?? preset.database.multiAz,
      storageGiB: c.dbStorageGiB ?? preset.database.storageGiB,
    },
    natGateways: c.natGateways ?? preset.natGateways,
    certificateArn: c.certificateArn,
    domainName: c.domainName,
    authJwksUrl: c.authJwksUrl,
    webhookUrl: c.webhookUrl,
    serverSettings,
    allowedOrigins: c.allowedOrigins,
    retainData: c.retainData ?? true,
    loadAgents: c.loadAgents ?? false,
    shutdownTimeoutSeconds: c.shutdownTimeoutSeconds ?? 25,
    alarmEmail: c.alarmEmail,
    commit: c.commit ?? defaults.commit,
    cpuArchitecture: c.cpuArchitecture,
  }
}

/** Fargate's allowed memory for each CPU size, in MiB. */
function checkFargateMemory(cpu: number, memoryMiB: number): void {
  const [min, max] = cpu === 256 ? [512, 2048] : cpu === 512 ? [1024, 4096] : [2048, 8192]
  if (memoryMiB < min || memoryMiB > max || (memoryMiB % 1024 !== 0 && memoryMiB !== 512)) {
    throw new Error(
      `context taskMemoryMiB: Fargate allows ${min}–${max} MiB in 1024 steps for ${cpu} CPU units`,
    )
  }
}
