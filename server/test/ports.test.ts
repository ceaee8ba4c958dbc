import assert from 'node:assert/strict'
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { crc32 } from 'node:zlib'
import {
  DeleteTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb'
import { startRedis } from '@symphony/dev-scripts/services'
import {
  createRegistryTable,
  createSnapshotBucket,
  DynamoRoomRegistry,
  FileSnapshotStore,
  FileUpdateJournal,
  MemoryJournalTable,
  MemoryRegistryTable,
  MemoryRoomRegistry,
  MemorySnapshotStore,
  MemoryUpdateJournal,
  NoopMetadataSink,
  RedisUpdateJournal,
  S3SnapshotStore,
  type SnapshotStore,
  silentLogger,
} from '@symphony/server'
import {
  type JournalFixture,
  metadataSinkContract,
  roomRegistryContract,
  snapshotStoreContract,
  updateJournalContract,
} from '@symphony/server/contracts'
import { Redis } from 'ioredis'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { type LogEntry, recordingLogger } from './helpers/recording-logger.js'
import { destroyTestAwsClients, requireTestServices, testAwsClients, uniqueName } from './helpers/services.js'

// Each port's contract suite, run against every adapter that exists. The real adapters use the
// Redis and AWS emulator that `npm test` starts; each run gets its own keys, table and prefix.
// Suites and adapters both come from the built package, as an adapter author's would: a suite
// checks errors by class (SnapshotConflictError), which an adapter loaded from src/ would not share.
// Each port's adapters are listed together: add a new one beside its kind.

roomRegistryContract('MemoryRoomRegistry', async (leaseMs) => {
  const table = new MemoryRegistryTable()
  const serverA = { serverId: 'a', internalAddress: '10.0.0.1:4000' }
  const serverB = { serverId: 'b', internalAddress: '10.0.0.2:4000' }
  const a = new MemoryRoomRegistry(serverA, { leaseMs, now: Date.now }, table)
  const b = new MemoryRoomRegistry(serverB, { leaseMs, now: Date.now }, table)
  return {
    a,
    b,
    serverA,
    serverB,
    leaseMs,
    cleanup: async () => void (await Promise.all([a.close(), b.close()])),
  }
})

const registryTableName = uniqueName('symphony-rooms')
let registryTable: Promise<void> | null = null
/** The run's registry table, created on first use (twice, to check that a second call is harmless). */
function ensureRegistryTable(): Promise<void> {
  const { dynamo } = testAwsClients()
  registryTable ??= createRegistryTable(dynamo, registryTableName).then(() =>
    createRegistryTable(dynamo, registryTableName),
  )
  return registryTable
}

roomRegistryContract('DynamoRoomRegistry', async (leaseMs) => {
  await ensureRegistryTable()
  const options = {
    leaseMs,
    now: Date.now,
    tableName: registryTableName,
    client: testAwsClients().dynamo,
    logger: silentLogger,
  }
  const serverA = { serverId: 'a', internalAddress: '10.0.0.1:4000' }
  const serverB = { serverId: 'b', internalAddress: '10.0.0.2:4000' }
  const a = new DynamoRoomRegistry(serverA, options)
  const b = new DynamoRoomRegistry(serverB, options)
  return {
    a,
    b,
    serverA,
    serverB,
    leaseMs,
    cleanup: async () => void (await Promise.all([a.close(), b.close()])),
  }
})

const snapshotBucket = 'symphony-test-snapshots'
const snapshotPrefix = `${uniqueName('run')}/`
let bucket: Promise<void> | null = null
/** The shared test bucket, created on first use (twice, to check that a second call is harmless). */
function ensureSnapshotBucket(): Promise<void> {
  const { s3 } = testAwsClients()
  bucket ??= createSnapshotBucket(s3, snapshotBucket).then(() => createSnapshotBucket(s3, snapshotBucket))
  return bucket
}

const snapshotStores: [name: string, open: () => Promise<SnapshotStore>][] = [
  ['MemorySnapshotStore', async () => new MemorySnapshotStore()],
  ['FileSnapshotStore', async () => new FileSnapshotStore(mkdtempSync(join(tmpdir(), 'snap-')))],
  [
    'S3SnapshotStore',
    async () => {
      await ensureSnapshotBucket()
      return new S3SnapshotStore({
        bucket: snapshotBucket,
        prefix: snapshotPrefix,
        client: testAwsClients().s3,
      })
    },
  ],
]
for (const [name, open] of snapshotStores) snapshotStoreContract(name, open)

const updateJournals: [name: string, fixture: () => Promise<JournalFixture>][] = [
  [
    'MemoryUpdateJournal',
    async () => {
      const table = new MemoryJournalTable()
      return { open: () => new MemoryUpdateJournal(table), cleanup: async () => {} }
    },
  ],
  [
    'FileUpdateJournal',
    async () => {
      const folder = mkdtempSync(join(tmpdir(), 'journal-'))
      return { open: () => new FileUpdateJournal(folder), cleanup: async () => {}, singleWriter: true }
    },
  ],
  [
    'RedisUpdateJournal',
    async () => {
      const { redisUrl } = requireTestServices()
      const options = { keyPrefix: `${uniqueName('test')}:`, logger: silentLogger }
      const admin = new Redis(redisUrl)
      return {
        open: (writer) => new RedisUpdateJournal(writer, redisUrl, options),
        cleanup: async () => {
          const left = await admin.keys(`${options.keyPrefix}*`)
          if (left.length > 0) await admin.del(...left)
          await admin.quit()
        },
      }
    },
  ],
]
for (const [name, fixture] of updateJournals) updateJournalContract(name, fixture)

metadataSinkContract('NoopMetadataSink', async () => new NoopMetadataSink())

// What the real adapters promise beyond the contracts.

describe('RedisUpdateJournal', () => {
  it('reconnects by itself after its connection is killed, logs it, and appends again', async () => {
    const { redisUrl } = requireTestServices()
    const logs: LogEntry[] = []
    const server = uniqueName('killed')
    const journal = new RedisUpdateJournal(server, redisUrl, {
      keyPrefix: `${uniqueName('test')}:`,
      logger: recordingLogger(logs),
    })
    const admin = new Redis(redisUrl)
    const room = uniqueRoom('killed-link')
    try {
      await journal.append(room, new Uint8Array([1]))
      const clients = String(await admin.call('CLIENT', 'LIST'))
      const id = /id=(\d+) .*name=(\S+)/
        .exec(clients.split('\n').find((line) => line.includes(`name=${server}:journal `)) ?? '')
        ?.at(1)
      assert.ok(id, "the journal's connection is listed by its name")
      await admin.call('CLIENT', 'KILL', 'ID', id)
      await eventually(
        () => logs.some((entry) => entry.message === 'redis connection lost, reconnecting'),
        'the loss is logged',
      )
      await journal.append(room, new Uint8Array([2]))
      const { updates } = await journal.read(room)
      assert.deepEqual(
        updates.map((update) => [...update]),
        [[1], [2]],
      )
    } finally {
      await journal.delete(room).catch(() => {})
      await Promise.all([journal.close(), admin.quit()])
    }
  })

  it("keeps a room's one stream and its name, and deletes both once trimmed empty", async () => {
    const { redisUrl } = requireTestServices()
    const keyPrefix = `${uniqueName('test')}:`
    const admin = new Redis(redisUrl)
    const journal = new RedisUpdateJournal('server-a', redisUrl, { keyPrefix, logger: silentLogger })
    const other = new RedisUpdateJournal('server-b', redisUrl, { keyPrefix, logger: silentLogger })
    const room = uniqueRoom('journal')
    try {
      await journal.append(room, new Uint8Array([7]))
      const position = await other.append(room, new Uint8Array([8]))
      assert.deepEqual((await admin.keys(`${keyPrefix}*`)).sort(), [
        `${keyPrefix}journal:{${room}}`,
        `${keyPrefix}journal:{${room}}:owner`,
      ])
      assert.deepEqual(await admin.smembers(`${keyPrefix}journal:{${room}}`), ['owner'])
      await journal.trim(room, position)
      assert.deepEqual(await admin.keys(`${keyPrefix}*`), [])
    } finally {
      await Promise.all([journal.close(), other.close(), admin.quit()])
    }
  })

  it('reads and trims the stream per server an earlier version wrote, beside the room’s one', async () => {
    const { redisUrl } = requireTestServices()
    const keyPrefix = `${uniqueName('test')}:`
    const admin = new Redis(redisUrl)
    const journal = new RedisUpdateJournal('server-a', redisUrl, { keyPrefix, logger: silentLogger })
    const room = uniqueRoom('journal')
    try {
      // What a server of the earlier version left: a stream of its own, named in the room's set.
      await admin.xadd(`${keyPrefix}journal:{${room}}:old-server`, '*', 'u', Buffer.from([1]))
      await admin.sadd(`${keyPrefix}journal:{${room}}`, 'old-server')
      await journal.append(room, new Uint8Array([2]))
      const read = await journal.read(room)
      assert.deepEqual(read.updates.map(([value]) => value).sort(), [1, 2])
      await journal.trim(room, read.position)
      assert.deepEqual(await admin.keys(`${keyPrefix}*`), [], 'both trimmed away')
    } finally {
      await Promise.all([journal.close(), admin.quit()])
    }
  })

  it('keeps a room’s fence beside its streams, for a week after its owner’s last write', async () => {
    const { redisUrl } = requireTestServices()
    const keyPrefix = `${uniqueName('test')}:`
    const admin = new Redis(redisUrl)
    const journal = new RedisUpdateJournal('server-a', redisUrl, { keyPrefix, logger: silentLogger })
    const room = uniqueRoom('journal')
    const fence = `${keyPrefix}journal-fence:{${room}}`
    const week = 7 * 24 * 3600 * 1000
    try {
      await journal.append(room, new Uint8Array([7])) // no epoch: no fence
      assert.equal(await admin.exists(fence), 0)
      await journal.fence(room, 4)
      assert.equal(await admin.get(fence), '4')
      await admin.pexpire(fence, 1000)
      await journal.append(room, new Uint8Array([8]), 4)
      const lifetime = await admin.pttl(fence)
      assert.ok(lifetime > week - 60_000 && lifetime <= week, `renewed by the write: ${lifetime} ms`)
    } finally {
      await Promise.all([journal.close(), admin.quit()])
    }
  })
})

describe('RedisUpdateJournal on a Redis that refuses writes (out of memory)', () => {
  it('keeps its link up: the heartbeat is a PING, answered while writes are refused', async () => {
    const redis = await startRedis() // its own: it is starved of memory
    const admin = new Redis(redis.url)
    const logs: LogEntry[] = []
    const failures: string[] = []
    let losses = 0
    const journal = new RedisUpdateJournal('server-a', redis.url, {
      keyPrefix: `${uniqueName('test')}:`,
      logger: recordingLogger(logs),
      outcomes: { failed: (_dependency, action) => failures.push(action), succeeded() {} },
      link: { heartbeatIntervalMs: 50, heartbeatTimeoutMs: 500 },
    })
    journal.onPossibleLoss(() => losses++)
    try {
      await journal.append(uniqueRoom('journal'), new Uint8Array([1]))
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.config('SET', 'maxmemory', '1')
      await assert.rejects(journal.append(uniqueRoom('journal'), new Uint8Array([2])), /OOM/)
      // Reads answer, over several heartbeats.
      for (let round = 0; round < 5; round++) {
        await journal.read(uniqueRoom('journal'))
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.deepEqual(
        failures.filter((action) => action !== 'append'),
        [],
        'no missed heartbeat',
      )
      assert.equal(losses, 0, 'the connection was never replaced')
    } finally {
      await admin.config('SET', 'maxmemory', '0').catch(() => {})
      await Promise.all([journal.close(), admin.quit()])
      await redis.stop()
    }
  })
})

describe('FileUpdateJournal', () => {
  it('drops a torn last record (a crash mid-write) and appends after the whole ones', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'journal-'))
    const room = uniqueRoom('journal')
    const journal = new FileUpdateJournal(folder)
    await journal.append(room, new Uint8Array([1, 2]))
    await journal.close()
    // Half a record: a length saying 100 bytes, a checksum, then only 3 of them.
    appendFileSync(join(folder, `${room}.journal`), new Uint8Array([100, 0, 0, 0, 9, 9, 9, 9, 5, 5, 5]))
    const next = new FileUpdateJournal(folder)
    assert.deepEqual((await next.read(room)).updates, [new Uint8Array([1, 2])])
    await next.append(room, new Uint8Array([3]))
    assert.deepEqual((await next.read(room)).updates, [new Uint8Array([1, 2]), new Uint8Array([3])])
    await next.close()
  })

  it('skips a damaged record in the middle, counts it, and keeps every record after it, also when appending again', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'journal-'))
    const room = uniqueRoom('journal')
    const journal = new FileUpdateJournal(folder)
    for (const update of [[1, 2], [3, 4, 5], [6], [7, 8]]) await journal.append(room, new Uint8Array(update))
    await journal.close()
    const path = join(folder, `${room}.journal`)
    const bytes = readFileSync(path)
    // The second record's payload starts after the header (12), the first record (8 + 2) and its own header (8).
    const damaged = 12 + 10 + 8 + 1
    bytes.writeUInt8(bytes.readUInt8(damaged) ^ 0xff, damaged)
    writeFileSync(path, bytes)
    const next = new FileUpdateJournal(folder)
    const read = await next.read(room)
    assert.deepEqual(read.updates, [new Uint8Array([1, 2]), new Uint8Array([6]), new Uint8Array([7, 8])])
    assert.equal(read.skipped, 1)
    await next.append(room, new Uint8Array([9]))
    assert.deepEqual(
      (await next.read(room)).updates.at(-1),
      new Uint8Array([9]),
      'nothing after the damage was cut',
    )
    assert.equal((await next.read(room)).updates.length, 4)
    await next.close()
  })

  it('never reads a record out of a damaged one (a client’s bytes could spell one)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'journal-'))
    const room = uniqueRoom('journal')
    const journal = new FileUpdateJournal(folder)
    const forged = Buffer.alloc(9)
    forged.writeUInt32LE(1, 0)
    forged.writeUInt32LE(crc32(new Uint8Array([7])), 4)
    forged.writeUInt8(7, 8)
    await journal.append(room, new Uint8Array(forged))
    await journal.append(room, new Uint8Array([8]))
    await journal.close()
    const path = join(folder, `${room}.journal`)
    const bytes = readFileSync(path)
    bytes.writeUInt32LE(0, 12 + 4) // the first record's checksum no longer matches
    writeFileSync(path, bytes)
    const read = await new FileUpdateJournal(folder).read(room)
    assert.deepEqual(read.updates, [new Uint8Array([8])])
    assert.equal(read.skipped, 1)
  })

  it('refuses a file that is not a journal instead of reading it as empty', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'journal-'))
    const room = uniqueRoom('journal')
    writeFileSync(join(folder, `${room}.journal`), 'not a journal at all')
    await assert.rejects(new FileUpdateJournal(folder).read(room), /not a Symphony journal/)
  })
})

describe('createRegistryTable', () => {
  it('turns on TTL on expiresAt, which DynamoRoomRegistry writes in epoch seconds', async () => {
    await ensureRegistryTable()
    const { dynamo } = testAwsClients()
    const ttl = await dynamo.send(new DescribeTimeToLiveCommand({ TableName: registryTableName }))
    assert.equal(ttl.TimeToLiveDescription?.AttributeName, 'expiresAt')
    assert.equal(ttl.TimeToLiveDescription?.TimeToLiveStatus, 'ENABLED')

    const self = { serverId: uniqueName('s'), internalAddress: '10.0.0.3:4000' }
    const options = { leaseMs: 30_000, now: () => 1_700_000_000_500, logger: silentLogger }
    const registry = new DynamoRoomRegistry(self, {
      ...options,
      tableName: registryTableName,
      client: dynamo,
    })
    // Its own lease, which the rooms it owns live by: written at once, then by the heartbeat.
    const Key = { room: { S: '\u0000servers' }, serverId: { S: self.serverId } }
    await eventually(async () => {
      const { Item } = await dynamo.send(new GetItemCommand({ TableName: registryTableName, Key }))
      return Item !== undefined
    }, 'the lease is written')
    const { Item } = await dynamo.send(new GetItemCommand({ TableName: registryTableName, Key }))
    assert.deepEqual(
      { ...Item, boot: undefined },
      {
        ...Key,
        address: { S: '10.0.0.3:4000' },
        boot: undefined,
        expiresAtMs: { N: '1700000030500' },
        expiresAt: { N: '1700000031' },
      },
    )
    await registry.close()
  })
})

describe('DynamoRoomRegistry', () => {
  it('logs a renewal of its lease that fails, and renews it again at the next beat', async () => {
    let puts = 0
    const client = {
      send: async (command: object) => {
        if (!(command instanceof PutItemCommand)) return {}
        puts++
        throw new Error('throttled')
      },
    } as unknown as DynamoDBClient
    const logs: LogEntry[] = []
    const self = { serverId: 's', internalAddress: '10.0.0.4:4000' }
    const registry = new DynamoRoomRegistry(self, {
      leaseMs: 60,
      now: Date.now,
      tableName: 't',
      client,
      logger: recordingLogger(logs),
    })
    await eventually(() => logs.length >= 2, 'two failed renewals are logged')
    await registry.close()
    assert.ok(puts >= 3, 'the first write and two renewals')
    const [entry] = logs
    assert.ok(entry)
    assert.equal(entry.level, 'error')
    assert.equal(entry.message, "this server's lease was not renewed")
    assert.match(
      String((entry.fields as { err?: Error }).err),
      /own lease was not refreshed \(Error: throttled\)/,
    )
  })
})

describe('S3SnapshotStore', () => {
  it('fails rather than reporting "never saved" when the bucket does not exist', async () => {
    const store = new S3SnapshotStore({
      bucket: uniqueName('missing-bucket'),
      prefix: '',
      client: testAwsClients().s3,
    })
    await assert.rejects(store.load(uniqueRoom('snap')), /NoSuchBucket/)
  })
})

after(async () => {
  if (registryTable) {
    await registryTable.catch(() => {})
    await testAwsClients()
      .dynamo.send(new DeleteTableCommand({ TableName: registryTableName }))
      .catch(() => {})
  }
  destroyTestAwsClients()
})

describe('the memory and file stores keep a bounded number of versions', () => {
  const bounded: [name: string, open: (versions?: number) => SnapshotStore][] = [
    [
      'MemorySnapshotStore',
      (versions) => new MemorySnapshotStore(versions === undefined ? {} : { versions }),
    ],
    [
      'FileSnapshotStore',
      (versions) =>
        new FileSnapshotStore(
          mkdtempSync(join(tmpdir(), 'snap-')),
          versions === undefined ? {} : { versions },
        ),
    ],
  ]
  for (const [name, open] of bounded) {
    it(`${name}: keeps the newest ones past its bound, its deletions counted`, async () => {
      const store = open(3)
      const room = uniqueRoom('snap')
      let version: string | null = null
      for (let i = 1; i <= 5; i++) version = await store.save(room, new Uint8Array(i), version)
      const kept = (await store.listVersions(room, { limit: 100 })).versions
      assert.deepEqual(
        kept.map((v) => v.bytes),
        [5, 4, 3],
      )
      await assert.rejects(store.readVersion(room, 'x'), { code: 'VERSION_NOT_FOUND' })
      await store.delete(room, 0)
      const afterDeletion = (await store.listVersions(room, { limit: 100 })).versions
      assert.deepEqual(
        afterDeletion.map((v) => v.deleted ?? v.bytes),
        [true, 5, 4],
      )
      // A cursor of a version dropped since still reads on from its place.
      const page = await store.listVersions(room, { limit: 1, cursor: kept[2]?.id ?? null })
      assert.deepEqual(page, { versions: [], nextCursor: null })
      await store.close()
    })

    it(`${name}: keeps only the current one when told to keep 1, and 20 by default`, async () => {
      const one = open(1)
      const many = open()
      const room = uniqueRoom('snap')
      let a: string | null = null
      let b: string | null = null
      for (let i = 1; i <= 25; i++) {
        a = await one.save(room, new Uint8Array(i), a)
        b = await many.save(room, new Uint8Array(i), b)
      }
      assert.deepEqual(
        (await one.listVersions(room, { limit: 100 })).versions.map((v) => v.bytes),
        [25],
      )
      assert.equal((await many.listVersions(room, { limit: 100 })).versions.length, 20)
    })
  }
})

describe('FileSnapshotStore', () => {
  it('takes over a lock left by a saver that died, and waits for one that is held', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'snap-'))
    const store = new FileSnapshotStore(folder)
    const room = uniqueRoom('snap')
    const lock = join(folder, `${room}.ybin.lock`)
    writeFileSync(lock, 'a saver that crashed')
    const minuteAgo = new Date(Date.now() - 60_000)
    utimesSync(lock, minuteAgo, minuteAgo)
    const first = await store.save(room, new Uint8Array([1]), null)
    assert.equal(existsSync(lock), false, 'released after the save')
    writeFileSync(lock, 'a saver at work')
    let saved = false
    const second = store.save(room, new Uint8Array([2]), first).then(() => {
      saved = true
    })
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(saved, false, 'waits while another saver holds the lock')
    rmSync(lock)
    await second
    assert.deepEqual((await store.load(room))?.state, new Uint8Array([2]))
    assert.deepEqual(
      readdirSync(folder).filter((name) => name !== `${room}.ybin` && name !== `${room}.ybin.versions`),
      [],
      'no temporary or lock file is left',
    )
  })
})
