import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseSettings, SIZES } from '../lib/settings.js'
import { POSTGRES_VERSION } from '../lib/sizes.js'

const settingsFrom = (context: Record<string, unknown>, defaultRegion?: string) =>
  parseSettings((key) => context[key], { region: defaultRegion })

function errorFor(context: Record<string, unknown>): string {
  try {
    settingsFrom(context)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error(`accepted ${JSON.stringify(context)}`)
}

describe('infra settings (CDK context)', () => {
  it('defaults to the small size, HTTP, data kept, no load agents', () => {
    const settings = settingsFrom({})
    assert.equal(settings.stackName, 'Symphony')
    assert.equal(settings.size, 'small')
    assert.deepEqual(settings.sync, SIZES.small.sync)
    assert.deepEqual(settings.redis, SIZES.small.redis)
    assert.equal(settings.certificateArn, undefined)
    assert.equal(settings.retainData, true)
    assert.equal(settings.loadAgents, false)
    assert.equal(settings.shutdownTimeoutSeconds, 25)
    assert.equal(settings.dashboard.allowedCidr, undefined, 'the dashboard is not on the internet')
    assert.equal(settings.alarmEmail, undefined)
    assert.equal(settings.cpuArchitecture, 'x86_64')
    assert.deepEqual(settings.journal, { store: 'elasticache' }, 'the journal in the ElastiCache Redis')
  })

  it('journalStore=memorydb puts the journal on MemoryDB: a small node, one shard, one replica unless told', () => {
    assert.deepEqual(settingsFrom({ journalStore: 'memorydb' }).journal, {
      store: 'memorydb',
      nodeType: 'db.t4g.small',
      shards: 1,
      replicas: 1,
    })
    const tuned = settingsFrom({
      journalStore: 'memorydb',
      journalNodeType: 'db.r7g.large',
      journalReplicas: '2',
    })
    assert.deepEqual(tuned.journal, { store: 'memorydb', nodeType: 'db.r7g.large', shards: 1, replicas: 2 })
    assert.equal(tuned.redis, undefined, 'no ElastiCache: the journal was all it held')
    assert.equal(settingsFrom({ journalStore: 'elasticache' }).journal.store, 'elasticache')
    assert.deepEqual(settingsFrom({ journalStore: 'elasticache' }).redis, SIZES.small.redis)
  })

  it('takes an alarm email, an allowed dashboard range and the CPU architecture', () => {
    const settings = settingsFrom({
      alarmEmail: 'ops@example.com',
      dashboardAllowedCidr: '203.0.113.0/24',
      cpuArchitecture: 'arm64',
    })
    assert.equal(settings.alarmEmail, 'ops@example.com')
    assert.equal(settings.dashboard.allowedCidr, '203.0.113.0/24')
    assert.equal(settings.cpuArchitecture, 'arm64')
  })

  it('takes more host names for the dashboard, or *', () => {
    assert.equal(settingsFrom({}).dashboard.allowedHosts, undefined)
    const hosts = 'ops.example.com, ops.example.com:8443'
    assert.equal(settingsFrom({ dashboardAllowedHosts: hosts }).dashboard.allowedHosts, hosts)
    assert.equal(settingsFrom({ dashboardAllowedHosts: '*' }).dashboard.allowedHosts, '*')
    assert.throws(
      () => settingsFrom({ dashboardAllowedHosts: 'https://ops.example.com' }),
      /dashboardAllowedHosts/,
    )
  })

  it('loadAgents is a flag; a count above 0, as it once was, still turns it on', () => {
    for (const [value, on] of [
      ['true', true],
      [true, true],
      ['4', true],
      [4, true],
      ['false', false],
      ['0', false],
    ] as const) {
      assert.equal(settingsFrom({ loadAgents: value }).loadAgents, on, String(value))
    }
  })

  it('takes the region from context, else the CLI, else us-east-1', () => {
    assert.equal(settingsFrom({}).region, 'us-east-1')
    assert.equal(settingsFrom({}, 'eu-west-1').region, 'eu-west-1')
    assert.equal(settingsFrom({ region: 'ap-southeast-2' }, 'eu-west-1').region, 'ap-southeast-2')
  })

  it('fills a size preset, and lets single keys (strings from -c) override it', () => {
    const large = settingsFrom({ size: 'large' })
    assert.deepEqual(large.database, { ...SIZES.large.database, engineVersion: POSTGRES_VERSION })
    const tuned = settingsFrom({
      size: 'medium',
      minTasks: '3',
      maxTasks: '12',
      redisReplicas: '2',
      dbMultiAz: 'false',
      retainData: 'false',
      taskCpu: '512',
    })
    assert.deepEqual(tuned.sync, { cpu: 512, memoryMiB: 1024, minTasks: 3, maxTasks: 12 })
    assert.deepEqual(tuned.redis, { nodeType: SIZES.medium.redis.nodeType, replicas: 2 })
    assert.equal(tuned.database.multiAz, false)
    assert.equal(tuned.retainData, false)
    assert.equal(settingsFrom({ minTasks: 5 }).sync.maxTasks, 5, 'max follows a larger min')
    assert.equal(settingsFrom({}).database.engineVersion, '16.13')
    assert.equal(settingsFrom({ dbEngineVersion: '16.14' }).database.engineVersion, '16.14')
  })

  it('refuses what would not deploy, naming the key', () => {
    assert.match(errorFor({ size: 'huge' }), /^context size:/)
    assert.match(errorFor({ taskCpu: '2048' }), /^context taskCpu: .*one core/)
    assert.match(
      errorFor({ taskCpu: '256', taskMemoryMiB: '4096' }),
      /^context taskMemoryMiB: Fargate allows 512–2048/,
    )
    assert.match(errorFor({ minTasks: '4', maxTasks: '2' }), /^context maxTasks: must be at least minTasks/)
    assert.match(errorFor({ minTasks: '0' }), /^context minTasks:/)
    assert.match(errorFor({ natGateways: '3' }), /^context natGateways:/)
    assert.match(errorFor({ dbEngineVersion: '17.2' }), /^context dbEngineVersion: must be 16\.<minor>/)
    assert.match(errorFor({ dashboardAllowedCidr: '10.0.0.0/33' }), /^context dashboardAllowedCidr:/)
    assert.match(errorFor({ certificateArn: 'my-cert' }), /^context certificateArn: must be an ACM/)
    assert.match(errorFor({ domainName: 'collab.example.com' }), /^context domainName: needs certificateArn/)
    assert.match(
      errorFor({ allowedOrigins: 'https://app.example.com/path' }),
      /^context allowedOrigins: must be comma-separated origins/,
    )
    assert.match(
      errorFor({ authJwksUrl: 'http://example.com/jwks' }),
      /^context authJwksUrl: must be an https/,
    )
    assert.match(
      errorFor({ loadAgents: 'true', loadCoordinatorUrl: 'ws://10.0.0.5:7000' }),
      /^context loadCoordinatorUrl: no longer used: `symphony-loadtest ecs --advertise-url`/,
    )
    assert.match(errorFor({ loadAgents: 'yes' }), /^context loadAgents:/)
    assert.match(errorFor({ loadAgents: '-1' }), /^context loadAgents:/)
    assert.match(errorFor({ retainData: 'maybe' }), /^context retainData:/)
    assert.match(errorFor({ alarmEmail: 'ops at example' }), /^context alarmEmail: must be an email/)
    assert.match(errorFor({ cpuArchitecture: 'arm' }), /^context cpuArchitecture:/)
    assert.match(errorFor({ commit: 'abc def' }), /^context commit: must be a commit id/)
    assert.match(errorFor({ stackName: '1-stack' }), /^context stackName:/)
    assert.match(
      errorFor({ journalStore: 'dynamodb' }),
      /^context journalStore: Invalid option: expected one of "elasticache"\|"memorydb"$/,
    )
    assert.match(
      errorFor({ journalStore: 'memorydb', journalNodeType: 'cache.t4g.small' }),
      /^context journalNodeType: must be like db\.t4g\.small$/,
    )
    assert.match(errorFor({ journalStore: 'memorydb', journalReplicas: '0' }), /^context journalReplicas:/)
    assert.match(
      errorFor({ journalNodeType: 'db.t4g.small' }),
      /^context journalNodeType: only with journalStore=memorydb$/,
    )
    assert.match(
      errorFor({ journalReplicas: '2' }),
      /^context journalReplicas: only with journalStore=memorydb$/,
    )
    for (const [key, value] of [
      ['redisNodeType', 'cache.t4g.small'],
      ['redisReplicas', '1'],
    ] as const) {
      assert.match(
        errorFor({ journalStore: 'memorydb', [key]: value }),
        new RegExp(`^context ${key}: not with journalStore=memorydb \\(there is no ElastiCache then\\)$`),
      )
    }
    assert.match(errorFor({ shutdownTimeoutSeconds: '200' }), /^context shutdownTimeoutSeconds:/)
  })

  it('takes the build commit from the context, else from the checkout', () => {
    const read = (context: Record<string, unknown>) => (key: string) => context[key]
    assert.equal(parseSettings(read({}), { commit: '0123456789ab' }).commit, '0123456789ab')
    assert.equal(parseSettings(read({ commit: 'v1.2.3' }), { commit: '0123456789ab' }).commit, 'v1.2.3')
    assert.equal(parseSettings(read({})).commit, undefined)
  })
})
