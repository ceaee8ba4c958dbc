import { z } from 'zod'

/**
 * The sync server's settings (docs/configuration.md) an operator may set with `-c serverSettings=…`,
 * each with the shape of its value; the server checks ranges at start, one line naming the variable.
 * None is a secret: secrets are generated in Secrets Manager and handed over as ECS secrets.
 */
const integer = z.string().regex(/^\d+$/, 'must be a whole number')
export const TUNABLE_SERVER_SETTINGS = {
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']),
  AUTH_ISSUER: z.string().regex(/^[^,\s]+$/, 'must be one value without spaces or commas'),
  AUTH_AUDIENCE: z.string().regex(/^[^,\s]+$/, 'must be one value without spaces or commas'),
  WEBHOOK_DEBOUNCE_MS: integer,
  REDIS_COMMAND_TIMEOUT_MS: integer,
  REDIS_CONNECT_TIMEOUT_MS: integer,
  REDIS_KEEPALIVE_MS: integer,
  REDIS_RETRY_MAX_DELAY_MS: integer,
  REDIS_HEARTBEAT_INTERVAL_MS: integer,
  REDIS_HEARTBEAT_TIMEOUT_MS: integer,
  METADATA_SAMPLE_INTERVAL_MS: integer,
  METADATA_RETENTION_DAYS: integer,
  REGISTRY_LEASE_MS: integer,
  SNAPSHOT_INTERVAL_MS: integer,
  ROOM_GRACE_MS: integer,
  API_SAVE_WAIT_MS: integer,
  API_MAX_LIST_LIMIT: integer,
  REGISTRY_WAIT_MS: integer,
  JOIN_WAIT_MS: integer,
  ROOM_LOAD_RETRY_MS: integer,
  ROOM_LOAD_RETRY_MAX_MS: integer,
  AWS_MAX_SOCKETS: integer,
  AWS_CONNECT_TIMEOUT_MS: integer,
  AWS_REQUEST_TIMEOUT_MS: integer,
  AWS_IDLE_TIMEOUT_MS: integer,
  PING_INTERVAL_MS: integer,
  MAX_MESSAGE_BYTES: integer,
  MAX_DOCUMENT_BYTES: integer,
  MAX_DOCUMENT_STRUCTS: integer,
  MAX_PENDING_BYTES: integer,
  MAX_PENDING_DELETE_BYTES: integer,
  MAX_PRESENCE_BYTES: integer,
  MAX_BUFFERED_BYTES: integer,
  MAX_CONNECTIONS: integer,
  MAX_CONNECTIONS_PER_ROOM: integer,
  MAX_MESSAGES_PER_SECOND: integer,
  MESSAGE_BURST: integer,
} as const

/**
 * The server's settings no deployment sets, and why. Every other one the docs list is either set by
 * the stack (fixed, or from its own context option) or in `TUNABLE_SERVER_SETTINGS`
 * (infra/test/parity.test.ts checks that against docs/configuration.md).
 */
export const SERVER_SETTINGS_NOT_EXPOSED: Record<string, string> = {
  HOST: 'each task has its own network interface (awsvpc); listening on all of it is right',
  SERVER_ID: 'the default, <hostname>-<pid>, is already unique per task',
  AUTH: 'a deployment always checks tokens; AUTH=none is for local development',
  AUTH_PUBLIC_KEY: 'authJwksUrl covers public-key tokens, and rotates keys without a deploy',
  DEV_TOKEN_ROUTE: 'development only: it hands edit tokens to anyone',
  PGLITE_PORT: 'only for the embedded database; the stack runs RDS Postgres',
  AWS_ENDPOINT_URL: 'for emulators such as moto; tasks reach the real AWS endpoints',
  AWS_ENDPOINT_URL_S3: 'as AWS_ENDPOINT_URL',
  AWS_ENDPOINT_URL_DYNAMODB: 'as AWS_ENDPOINT_URL',
  INTERNAL_HOST: 'each task finds its own address from the ECS task metadata endpoint',
  SNAPSHOT_FILE_VERSIONS:
    'the stack saves rooms to S3, where the bucket versioning and lifecycle rule keep old versions',
  GIT_COMMIT: 'an alias of SYMPHONY_COMMIT, which the `commit` option sets',
  HOOK_TIMEOUT_MS:
    'only a server embedded with hooks (createSyncServer) uses it; the deployed image has none',
}

export type ServerSettings = Partial<Record<keyof typeof TUNABLE_SERVER_SETTINGS, string>>

/**
 * `serverSettings`: `KEY=value,KEY=value` on the command line, or an object in cdk.json. Throws
 * one line naming the setting.
 */
export function parseServerSettings(raw: unknown, label = 'context serverSettings'): ServerSettings {
  if (raw === undefined) return {}
  let entries: [string, unknown][]
  if (typeof raw === 'string') {
    entries = raw
      .split(',')
      .filter((pair) => pair.trim())
      .map((pair) => {
        const at = pair.indexOf('=')
        if (at < 1) throw new Error(`${label}: "${pair}" must be KEY=value`)
        return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()]
      })
  } else if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    entries = Object.entries(raw)
  } else {
    throw new Error(`${label}: must be KEY=value,… or an object`)
  }
  const settings: Record<string, string> = {}
  for (const [key, value] of entries) {
    const schema = TUNABLE_SERVER_SETTINGS[key as keyof typeof TUNABLE_SERVER_SETTINGS]
    if (!schema) {
      throw new Error(
        `${label}: ${key} is not a server setting the stack lets you set (docs/deploy.md#server-settings)`,
      )
    }
    const parsed = schema.safeParse(typeof value === 'number' ? String(value) : value)
    if (!parsed.success) {
      throw new Error(`${label}: ${key} ${parsed.error.issues[0]?.message ?? 'is invalid'}`)
    }
    settings[key] = parsed.data
  }
  return settings
}
