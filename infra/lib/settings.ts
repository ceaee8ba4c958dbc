import { z } from 'zod'
import { parseServerSettings, type ServerSettings } from './server-settings.js'
import type { CpuArchitectureName, JournalSettings, SizeName } from './sizes.js'
import { resolveSizes, SymphonyPropsError } from './symphony-props.js'

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
  /** The ElastiCache Redis that holds the journal; unset with the journal on MemoryDB. */
  redis: { nodeType: string; replicas: number } | undefined
  /** Where the update journal lives: on ElastiCache, or on MemoryDB instead (see `JournalSettings`). */
  journal: JournalSettings
  database: { instanceType: string; multiAz: boolean; storageGiB: number; engineVersion: string }
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

export type { CpuArchitectureName, JournalSettings, SizeName } from './sizes.js'
export { MEMORYDB_JOURNAL, SIZES } from './sizes.js'

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
  dbEngineVersion: z.string().optional(),
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
  for (const key of ['redisNodeType', 'redisReplicas'] as const) {
    if (c[key] !== undefined && c.journalStore === 'memorydb') {
      throw new Error(`context ${key}: not with journalStore=memorydb (there is no ElastiCache then)`)
    }
  }
  if (c.domainName && !c.certificateArn) {
    throw new Error('context domainName: needs certificateArn (a name is only for HTTPS clients)')
  }
  const sizes = resolveContextSizes(c)
  return {
    stackName: c.stackName,
    region: c.region ?? defaults.region ?? 'us-east-1',
    size: sizes.size,
    sync: sizes.sync,
    dashboard: {
      ...sizes.dashboard,
      allowedCidr: c.dashboardAllowedCidr,
      allowedHosts: c.dashboardAllowedHosts,
    },
    redis: sizes.redis,
    journal: sizes.journal,
    database: sizes.database,
    natGateways: sizes.natGateways,
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

/** The context key of each size prop, for errors that name what the deployer typed. */
const CONTEXT_KEY_OF_PROP: Record<string, string> = {
  'sync.cpu': 'taskCpu',
  'sync.memoryMiB': 'taskMemoryMiB',
  'sync.minTasks': 'minTasks',
  'sync.maxTasks': 'maxTasks',
  'redis.replicas': 'redisReplicas',
  'journal.replicas': 'journalReplicas',
  'database.storageGiB': 'dbStorageGiB',
  'database.engineVersion': 'dbEngineVersion',
}

/** The context's sizes over its preset, as the construct resolves its props. */
function resolveContextSizes(c: z.infer<typeof context>) {
  try {
    return resolveSizes({
      size: c.size,
      sync: { cpu: c.taskCpu, memoryMiB: c.taskMemoryMiB, minTasks: c.minTasks, maxTasks: c.maxTasks },
      redis: { nodeType: c.redisNodeType, replicas: c.redisReplicas },
      journal:
        c.journalStore === 'memorydb'
          ? { store: 'memorydb', nodeType: c.journalNodeType, replicas: c.journalReplicas }
          : { store: 'elasticache' },
      database: {
        instanceType: c.dbInstanceType,
        multiAz: c.dbMultiAz,
        storageGiB: c.dbStorageGiB,
        engineVersion: c.dbEngineVersion,
      },
      natGateways: c.natGateways,
    })
  } catch (error) {
    if (!(error instanceof SymphonyPropsError)) throw error
    throw new Error(`context ${CONTEXT_KEY_OF_PROP[error.prop] ?? error.prop}: ${error.detail}`)
  }
}
