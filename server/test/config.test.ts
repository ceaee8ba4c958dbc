import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseConfig } from '../src/config.js'
import { ConfigError } from '../src/errors.js'

const secret = 'x'.repeat(32)
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url))

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
    assert.equal(config.snapshotIntervalMs, 30_000)
    assert.equal(config.limits.maxConnectionsPerRoom, 2_000)
    assert.match(config.snapshots.kind === 'file' ? config.snapshots.folder : '', /data\/snapshots$/)
    assert.match(config.journal.kind === 'file' ? config.journal.folder : '', /data\/journal$/)
    assert.equal(config.internal, null, 'no peers, no internal endpoint')
    const forDashboard = parseConfig({
      AUTH: 'none',
      INTERNAL_TOKEN: 'a-long-internal-token',
      INTERNAL_PORT: '0',
    })
    assert.deepEqual(forDashboard.internal, { port: 0, host: undefined, token: 'a-long-internal-token' })
  })

  it('takes the commit for build info from SYMPHONY_COMMIT, else GIT_COMMIT, else "unknown"', () => {
    assert.equal(parseConfig({ AUTH: 'none' }).commit, 'unknown')
    assert.equal(parseConfig({ AUTH: 'none', GIT_COMMIT: 'abc1234' }).commit, 'abc1234')
    assert.equal(
      parseConfig({ AUTH: 'none', GIT_COMMIT: 'abc1234', SYMPHONY_COMMIT: 'v1.2.3' }).commit,
      'v1.2.3',
    )
    assert.match(errorFor({ AUTH: 'none', SYMPHONY_COMMIT: 'a"}\nfake_metric 1' }), /SYMPHONY_COMMIT/)
  })

  it('keeps metadata in embedded PGlite by default, in Postgres or nowhere when told', () => {
    const embedded = parseConfig({ AUTH: 'none' }).database
    assert.equal(embedded.kind, 'pglite')
    assert.match(embedded.kind === 'pglite' ? embedded.folder : '', /\/data\/pg$/)
    assert.equal(embedded.kind === 'pglite' ? embedded.port : 0, 5433)
    assert.deepEqual(
      parseConfig({ AUTH: 'none', DATABASE_URL: 'postgres://u:p@db:5432/symphony' }).database,
      {
        kind: 'postgres',
        url: 'postgres://u:p@db:5432/symphony',
      },
    )
    assert.deepEqual(parseConfig({ AUTH: 'none', DATABASE_URL: 'none' }).database, { kind: 'none' })
    assert.match(errorFor({ AUTH: 'none', DATABASE_URL: 'mysql://db' }), /^DATABASE_URL: must be postgres/)
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
    assert.deepEqual(config.pubsub, { kind: 'redis', url: 'redis://cache:6379' })
    assert.deepEqual(config.journal, { kind: 'redis', url: 'redis://cache:6379' }, 'beside pub/sub')
    const ownJournal = parseConfig({ AUTH: 'none', JOURNAL: 'redis://journal:6379' }).journal
    assert.deepEqual(ownJournal, { kind: 'redis', url: 'redis://journal:6379' })
    assert.deepEqual(config.registry, { kind: 'dynamodb', table: 'symphony-rooms' })
    assert.deepEqual(config.snapshots, { kind: 's3', bucket: 'my-bucket', prefix: 'rooms/' })
    const noSlash = parseConfig({ AUTH: 'none', SNAPSHOTS: 's3://my-bucket/rooms' }).snapshots
    assert.deepEqual(noSlash, { kind: 's3', bucket: 'my-bucket', prefix: 'rooms/' }, 'a prefix is a folder')
    assert.deepEqual(parseConfig({ AUTH: 'none', SNAPSHOTS: 's3://my-bucket' }).snapshots, {
      kind: 's3',
      bucket: 'my-bucket',
      prefix: '',
    })
    assert.deepEqual(config.internal, { port: 9234, host: undefined, token: 'a-long-internal-token' })
    assert.equal(config.aws.endpoint, 'http://127.0.0.1:5000')
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

  it('turns the REST API on with a secret of at least 32 characters', () => {
    assert.equal(parseConfig({ AUTH: 'none' }).apiSecret, null)
    assert.equal(parseConfig({ AUTH: 'none', API_SECRET: secret }).apiSecret, secret)
    assert.match(
      errorFor({ AUTH: 'none', API_SECRET: 'short' }),
      /^API_SECRET: must be at least 32 characters/,
    )
  })

  it('sends webhooks only with both a URL and a whsec_ secret', () => {
    const hook = 'https://hooks.example.com/symphony'
    const whsec = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
    assert.equal(parseConfig({ AUTH: 'none' }).webhook, null)
    assert.deepEqual(parseConfig({ AUTH: 'none', WEBHOOK_URL: hook, WEBHOOK_SECRET: whsec }).webhook, {
      url: hook,
      secret: whsec,
      debounceMs: 5_000,
    })
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
    for (const message of [errorFor({}), errorFor({ AUTH: 'none', PORT: 'x' })])
      assert.doesNotMatch(message, /\n/)
  })

  it('stops the server at start-up with one clear line', () => {
    const result = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, PORT: 'abc', AUTH: 'none' },
    })
    assert.equal(result.status, 1)
    const lines = result.stderr.toString().trim().split('\n')
    assert.equal(lines.length, 1)
    assert.match(lines[0] ?? '', /^symphony: configuration error: PORT: /)
  })
})
