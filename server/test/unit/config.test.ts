import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { DEFAULT_REDIS_LINK } from '../../src/adapters/redis-connection.js'
import { DEFAULT_AWS_HTTP } from '../../src/backends.js'
import { configWarnings, parseConfig } from '../../src/config.js'
import { ConfigError } from '../../src/errors.js'
import { SERVER_VERSION } from '../../src/server-version.js'

const secret = 'x'.repeat(32)

function errorFor(env: Record<string, string>): string {
  try {
    parseConfig(env)
  } catch (error) {
    assert.ok(error instanceof ConfigError)
    return error.message
  }
  throw new Error(`accepted ${JSON.stringify(env)}`)
}

describe('configuration', () => {
  it('has defaults for everything but the auth decision', () => {
    const config = parseConfig({ AUTH: 'none' })
    assert.equal(config.port, 1234)
    assert.deepEqual(config.auth, { mode: 'none' })
    assert.deepEqual(config.snapshot, { intervalMs: 30_000, retryBaseMs: 1_000, retryMaxMs: 30_000 })
    assert.equal(config.roomGraceMs, 5_000)
    assert.equal(config.joinWaitMs, 30_000)
    assert.deepEqual([config.roomLoadRetryMs, config.roomLoadRetryMaxMs], [250, 5_000])
    assert.equal(config.limits.maxConnectionsPerRoom, 2_000)
    const { snapshots, journal, registry } = config.backends
    assert.match(snapshots.kind === 'file' ? snapshots.folder : '', /data\/snapshots$/)
    assert.match(journal.kind === 'file' ? journal.folder : '', /data\/journal$/)
    assert.deepEqual(registry, { kind: 'memory', leaseMs: 10_000 })
    assert.equal(config.internal, null, 'no peers, no internal endpoint')
    const forDashboard = parseConfig({
      AUTH: 'none',
      INTERNAL_TOKEN: 'a-long-internal-token',
      INTERNAL_PORT: '0',
    })
    assert.deepEqual(forDashboard.internal, {
      port: 0,
      token: 'a-long-internal-token',
      advertisedHost: undefined,
      taskMetadataUrl: undefined,
    })
  })

  it('takes the commit for build info from SYMPHONY_COMMIT, else GIT_COMMIT, else "unknown"', () => {
    const commitOf = (env: Record<string, string>) => parseConfig({ AUTH: 'none', ...env }).build.commit
    assert.equal(commitOf({}), 'unknown')
    assert.equal(commitOf({ GIT_COMMIT: 'abc1234' }), 'abc1234')
    assert.equal(commitOf({ GIT_COMMIT: 'abc1234', SYMPHONY_COMMIT: 'v1.2.3' }), 'v1.2.3')
    assert.equal(parseConfig({ AUTH: 'none' }).build.version, SERVER_VERSION)
    assert.match(errorFor({ AUTH: 'none', SYMPHONY_COMMIT: 'a"}\nfake_metric 1' }), /SYMPHONY_COMMIT/)
  })

  it('keeps metadata in embedded PGlite by default, in Postgres or nowhere when told', () => {
    const metadataOf = (env: Record<string, string>) =>
      parseConfig({ AUTH: 'none', ...env }).backends.metadata
    const embedded = metadataOf({})
    assert.equal(embedded.kind, 'pglite')
    assert.match(embedded.kind === 'pglite' ? embedded.folder : '', /\/data\/pg$/)
    assert.equal(embedded.kind === 'pglite' ? embedded.port : 0, 5433)
    assert.deepEqual(
      metadataOf({ DATABASE_URL: 'postgres://u:p@db:5432/symphony', METADATA_RETENTION_DAYS: '7' }),
      {
        kind: 'postgres',
        url: 'postgres://u:p@db:5432/symphony',
        retentionDays: 7,
      },
    )
    assert.deepEqual(metadataOf({ DATABASE_URL: 'none' }), { kind: 'none' })
    assert.match(errorFor({ AUTH: 'none', DATABASE_URL: 'mysql://db' }), /^DATABASE_URL: must be postgres/)
  })

  it('puts the journal on a Redis Cluster of its own over TLS (MemoryDB), with its own user and password', () => {
    const journalOf = (env: Record<string, string>) => parseConfig({ AUTH: 'none', ...env }).backends.journal
    assert.deepEqual(
      journalOf({
        PUBSUB: 'rediss://cache:6380',
        PUBSUB_PASSWORD: 'cache-token',
        JOURNAL: 'rediss://symphony@journal.memorydb.example:6379',
        JOURNAL_PASSWORD: 'p@ss/word',
        JOURNAL_CLUSTER: '1',
      }),
      {
        kind: 'redis',
        url: 'rediss://symphony:p%40ss%2Fword@journal.memorydb.example:6379',
        cluster: true,
        link: DEFAULT_REDIS_LINK,
      },
      'its own password, never the cluster Redis one',
    )
    assert.deepEqual(
      journalOf({ PUBSUB: 'rediss://cache:6380', PUBSUB_PASSWORD: 'cache-token' }),
      { kind: 'redis', url: 'rediss://:cache-token@cache:6380', cluster: false, link: DEFAULT_REDIS_LINK },
      "in the cluster's Redis (PUBSUB), with its password",
    )
    assert.match(
      errorFor({ AUTH: 'none', PUBSUB: 'redis://cache:6379', JOURNAL_PASSWORD: 'x' }),
      /^JOURNAL_PASSWORD: needs JOURNAL/,
    )
    assert.match(
      errorFor({ AUTH: 'none', JOURNAL: 'file://./journal', JOURNAL_CLUSTER: '1' }),
      /^JOURNAL_CLUSTER: needs a Redis journal/,
    )
    assert.match(errorFor({ AUTH: 'none', JOURNAL_CLUSTER: 'yes' }), /^JOURNAL_CLUSTER: /)
  })

  it('reads the cluster adapters from their URLs', () => {
    const config = parseConfig({
      AUTH: 'none',
      PUBSUB: 'redis://cache:6379',
      REGISTRY: 'dynamodb://symphony-rooms',
      SNAPSHOTS: 's3://my-bucket/rooms/',
      INTERNAL_TOKEN: 'a-long-internal-token',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:5000',
    })
    const { backends } = config
    const aws = {
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:5000',
      s3Endpoint: undefined,
      dynamoEndpoint: undefined,
      ...DEFAULT_AWS_HTTP,
    }
    const link = DEFAULT_REDIS_LINK
    assert.deepEqual(
      backends.journal,
      { kind: 'redis', url: 'redis://cache:6379', cluster: false, link },
      "in the cluster's Redis (PUBSUB)",
    )
    assert.deepEqual(Object.keys(backends).sort(), ['events', 'journal', 'metadata', 'registry', 'snapshots'])
    const ownJournal = parseConfig({ AUTH: 'none', JOURNAL: 'redis://journal:6379' }).backends.journal
    assert.deepEqual(ownJournal, { kind: 'redis', url: 'redis://journal:6379', cluster: false, link })
    assert.deepEqual(backends.registry, { kind: 'dynamodb', table: 'symphony-rooms', leaseMs: 10_000, aws })
    assert.deepEqual(backends.snapshots, { kind: 's3', bucket: 'my-bucket', prefix: 'rooms/', aws })
    const tuned = parseConfig({
      AUTH: 'none',
      SNAPSHOTS: 's3://my-bucket/',
      AWS_MAX_SOCKETS: '500',
      AWS_CONNECT_TIMEOUT_MS: '1000',
      AWS_REQUEST_TIMEOUT_MS: '20000',
      AWS_IDLE_TIMEOUT_MS: '4000',
    }).backends.snapshots
    assert.deepEqual(
      tuned.kind === 's3' && [
        tuned.aws.maxSockets,
        tuned.aws.connectTimeoutMs,
        tuned.aws.requestTimeoutMs,
        tuned.aws.idleTimeoutMs,
      ],
      [500, 1_000, 20_000, 4_000],
    )
    const snapshotsOf = (url: string) => parseConfig({ AUTH: 'none', SNAPSHOTS: url }).backends.snapshots
    const noSlash = snapshotsOf('s3://my-bucket/rooms')
    assert.equal(noSlash.kind === 's3' && noSlash.prefix, 'rooms/', 'a prefix is a folder')
    const bucketOnly = snapshotsOf('s3://my-bucket')
    assert.equal(bucketOnly.kind === 's3' && bucketOnly.prefix, '')
    assert.deepEqual(config.internal, {
      port: 9234,
      token: 'a-long-internal-token',
      advertisedHost: undefined,
      taskMetadataUrl: undefined,
    })
    const onEcs = parseConfig({
      AUTH: 'none',
      INTERNAL_TOKEN: 'a-long-internal-token',
      ECS_CONTAINER_METADATA_URI_V4: 'http://169.254.170.2/v4/abc',
    })
    assert.equal(onEcs.internal?.taskMetadataUrl, 'http://169.254.170.2/v4/abc')
  })

  it("gives the journal's Redis connection the REDIS_* link settings", () => {
    const { journal } = parseConfig({
      AUTH: 'none',
      PUBSUB: 'redis://cache:6379',
      JOURNAL: 'redis://journal:6379',
      REDIS_COMMAND_TIMEOUT_MS: '2000',
      REDIS_CONNECT_TIMEOUT_MS: '3000',
      REDIS_KEEPALIVE_MS: '4000',
      REDIS_RETRY_MAX_DELAY_MS: '500',
      REDIS_HEARTBEAT_INTERVAL_MS: '1000',
      REDIS_HEARTBEAT_TIMEOUT_MS: '1500',
    }).backends
    const link = {
      commandTimeoutMs: 2_000,
      connectTimeoutMs: 3_000,
      keepAliveMs: 4_000,
      retryMaxDelayMs: 500,
      heartbeatIntervalMs: 1_000,
      heartbeatTimeoutMs: 1_500,
    }
    assert.deepEqual(journal, { kind: 'redis', url: 'redis://journal:6379', cluster: false, link })
    assert.match(errorFor({ AUTH: 'none', REDIS_COMMAND_TIMEOUT_MS: '0' }), /^REDIS_COMMAND_TIMEOUT_MS: /)
    assert.match(
      errorFor({ AUTH: 'none', REDIS_HEARTBEAT_TIMEOUT_MS: 'soon' }),
      /^REDIS_HEARTBEAT_TIMEOUT_MS: /,
    )
  })

  it('warns of servers sharing Redis with an in-memory registry, not of one server or a shared registry', () => {
    const redis = 'redis://127.0.0.1:6379'
    const warned = (env: Record<string, string>) => configWarnings(parseConfig({ AUTH: 'none', ...env }))
    assert.deepEqual(warned({}), [], 'npm start: files and memory')
    assert.match(
      warned({ PUBSUB: redis }).join(),
      /REGISTRY=memory with a Redis journal: run one server only/,
    )
    assert.equal(warned({ JOURNAL: redis }).length, 1)
    const shared = { REGISTRY: 'dynamodb://rooms', INTERNAL_TOKEN: 'internal-token-0123456789' }
    assert.deepEqual(warned({ PUBSUB: redis, ...shared }), [], 'a shared registry')
  })

  it('turns auth on when a secret, key or JWKS URL is set', () => {
    assert.equal(parseConfig({ AUTH_SECRET: secret }).auth.mode, 'jwt')
    assert.equal(parseConfig({ AUTH_JWKS_URL: 'https://id.example.com/jwks.json' }).auth.mode, 'jwt')
  })

  it('turns the development token route on only when asked, and only with the secret it signs with', () => {
    assert.equal(parseConfig({ AUTH_SECRET: secret }).devTokenSecret, null, 'off by default')
    assert.equal(parseConfig({ AUTH_SECRET: secret, DEV_TOKEN_ROUTE: '1' }).devTokenSecret, secret)
    assert.match(errorFor({ AUTH: 'none', DEV_TOKEN_ROUTE: '1' }), /^DEV_TOKEN_ROUTE: needs AUTH_SECRET/)
    assert.match(errorFor({ AUTH_SECRET: secret, DEV_TOKEN_ROUTE: 'yes' }), /^DEV_TOKEN_ROUTE: /)
  })

  it('keeps 20 versions per room in a file store unless SNAPSHOT_FILE_VERSIONS says otherwise (1–1000)', () => {
    assert.deepEqual(parseConfig({ AUTH: 'none' }).backends.snapshots, {
      kind: 'file',
      folder: join(process.cwd(), 'data', 'snapshots'),
      versions: 20,
    })
    const five = parseConfig({ AUTH: 'none', SNAPSHOT_FILE_VERSIONS: '5' }).backends.snapshots
    assert.equal(five.kind === 'file' && five.versions, 5)
    for (const bad of ['0', '1001', 'many']) {
      assert.match(errorFor({ AUTH: 'none', SNAPSHOT_FILE_VERSIONS: bad }), /^SNAPSHOT_FILE_VERSIONS: /)
    }
  })

  it('turns the REST API on with a secret of at least 32 characters', () => {
    assert.equal(parseConfig({ AUTH: 'none' }).apiSecret, null)
    assert.equal(parseConfig({ AUTH: 'none', API_SECRET: secret }).apiSecret, secret)
    assert.equal(parseConfig({ AUTH: 'none' }).apiMaxListLimit, 1_000)
    assert.equal(parseConfig({ AUTH: 'none', API_MAX_LIST_LIMIT: '50' }).apiMaxListLimit, 50)
    assert.match(errorFor({ AUTH: 'none', API_MAX_LIST_LIMIT: '0' }), /^API_MAX_LIST_LIMIT: /)
    assert.match(
      errorFor({ AUTH: 'none', API_SECRET: 'short' }),
      /^API_SECRET: must be at least 32 characters/,
    )
  })

  it('sends webhooks only with both a URL and a whsec_ secret', () => {
    const hook = 'https://hooks.example.com/symphony'
    const whsec = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
    assert.deepEqual(parseConfig({ AUTH: 'none' }).backends.events, { kind: 'none' })
    assert.deepEqual(
      parseConfig({ AUTH: 'none', WEBHOOK_URL: hook, WEBHOOK_SECRET: whsec }).backends.events,
      {
        kind: 'webhook',
        url: hook,
        secret: whsec,
        debounceMs: 5_000,
      },
    )
    assert.match(errorFor({ AUTH: 'none', WEBHOOK_URL: hook }), /^WEBHOOK_URL: needs WEBHOOK_SECRET/)
    assert.match(errorFor({ AUTH: 'none', WEBHOOK_SECRET: whsec }), /^WEBHOOK_SECRET: set WEBHOOK_URL too/)
    assert.match(
      errorFor({ AUTH: 'none', WEBHOOK_URL: hook, WEBHOOK_SECRET: 'plain' }),
      /^WEBHOOK_SECRET: must be whsec_/,
    )
  })

  it('refuses bad values with one line naming the variable', () => {
    assert.match(errorFor({ AUTH: 'none', PORT: 'abc' }), /^PORT: /)
    assert.match(errorFor({ AUTH: 'none', PORT: '70000' }), /^PORT: /)
    assert.match(errorFor({}), /^AUTH: set AUTH_SECRET/)
    assert.match(errorFor({ AUTH: 'none', AUTH_SECRET: secret }), /^AUTH: "none" contradicts AUTH_SECRET/)
    assert.match(errorFor({ AUTH_SECRET: 'short' }), /^AUTH_SECRET: must be at least 32/)
    assert.match(errorFor({ AUTH_SECRET: secret, AUTH_JWKS_URL: 'https://x/j' }), /^AUTH: set only one/)
    assert.match(errorFor({ AUTH: 'none', SNAPSHOTS: 'ftp://bucket/' }), /^SNAPSHOTS: /)
    assert.match(errorFor({ AUTH: 'none', PUBSUB: 'kafka://localhost' }), /^PUBSUB: /)
    assert.match(errorFor({ AUTH: 'none', REGISTRY: 'dynamodb://t' }), /^REGISTRY: /)
    const cluster = { AUTH: 'none', REGISTRY: 'dynamodb://rooms', PUBSUB: 'redis://r:6379' }
    assert.match(errorFor(cluster), /^INTERNAL_TOKEN: required/)
    assert.match(
      errorFor({ ...cluster, PUBSUB: 'memory', INTERNAL_TOKEN: 'x'.repeat(16) }),
      /^PUBSUB: a shared REGISTRY/,
    )
    assert.match(
      errorFor({ ...cluster, INTERNAL_TOKEN: 'x'.repeat(16), JOURNAL: 'file://./journal' }),
      /^JOURNAL: a shared REGISTRY needs a shared journal/,
    )
    assert.match(errorFor({ AUTH: 'none', JOURNAL: 's3://bucket' }), /^JOURNAL: must be file/)
    assert.match(errorFor({ AUTH: 'none', ALLOWED_ORIGINS: 'https://a.com/' }), /^ALLOWED_ORIGINS: must be/)
    assert.deepEqual(
      parseConfig({ AUTH: 'none', ALLOWED_ORIGINS: 'https://a.com, http://localhost:5173' }).allowedOrigins,
      ['https://a.com', 'http://localhost:5173'],
    )
    assert.match(
      errorFor({ ...cluster, INTERNAL_TOKEN: 'x'.repeat(16), PORT: '9000', INTERNAL_PORT: '9000' }),
      /^INTERNAL_PORT/,
    )
    assert.match(
      errorFor({ AUTH: 'none', MAX_MESSAGES_PER_SECOND: '50', MESSAGE_BURST: '10' }),
      /^MESSAGE_BURST/,
    )
    assert.match(
      errorFor({ AUTH: 'none', ROOM_LOAD_RETRY_MS: '1000', ROOM_LOAD_RETRY_MAX_MS: '500' }),
      /^ROOM_LOAD_RETRY_MAX_MS: must be at least ROOM_LOAD_RETRY_MS/,
    )
    assert.match(errorFor({ AUTH: 'none', JOIN_WAIT_MS: '0' }), /^JOIN_WAIT_MS: /)
    for (const message of [errorFor({}), errorFor({ AUTH: 'none', PORT: 'x' })])
      assert.doesNotMatch(message, /\n/)
  })
})
