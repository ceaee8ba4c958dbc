import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import tls from 'node:tls'
import { RedisUpdateJournal, silentLogger } from '@symphony/server'
import { updateJournalContract } from '@symphony/server/contracts'
import { parseConfig } from '../src/config.js'
import { uniqueRoom } from './helpers/clients.js'
import { uniqueName } from './helpers/services.js'
import { startTlsRedisCluster, type TlsRedisCluster } from './helpers/tls-redis-cluster.js'

// The journal on MemoryDB: a Redis Cluster, over TLS, as an ACL user with a password, configured
// the way the CDK stack configures the sync tasks (JOURNAL=rediss://user@host, JOURNAL_PASSWORD,
// JOURNAL_CLUSTER=1). The local cluster has two primaries, so half the rooms live on the node the
// client did not start at: only a client that follows the cluster's redirections passes.

let cluster: TlsRedisCluster

/** What parseConfig makes of the stack's settings for this cluster. */
function journalConfig() {
  const { journal } = parseConfig({
    AUTH: 'none',
    JOURNAL: `rediss://${cluster.user}@localhost:${cluster.port}`,
    JOURNAL_PASSWORD: cluster.password,
    JOURNAL_CLUSTER: '1',
  }).backends
  assert.ok(journal.kind === 'redis' && journal.cluster)
  return journal
}

const open = (writer: string, keyPrefix: string) => {
  const { url } = journalConfig()
  // A short writer's lease (2 × (200 + 300) ms): the contract waits for one to run out.
  const link = { heartbeatIntervalMs: 200, heartbeatTimeoutMs: 300 }
  return new RedisUpdateJournal(writer, url, { cluster: true, keyPrefix, logger: silentLogger, link })
}

/** Every key under `prefix`, on whichever node holds it. */
async function keysPerNode(prefix: string): Promise<string[][]> {
  return Promise.all(cluster.admins.map((admin) => admin.keys(`${prefix}*`)))
}

before(async () => {
  cluster = await startTlsRedisCluster()
  // The nodes' certificate is signed by the test's own authority; MemoryDB's by a public one.
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), cluster.ca])
})
after(() => cluster.stop())

updateJournalContract('RedisUpdateJournal on a Redis Cluster over TLS, as an ACL user', async () => {
  // Under `symphony:`, the only keys the user may touch, as the deployed user's access string allows.
  const keyPrefix = `symphony:${uniqueName('test')}:`
  return {
    open: (writer) => open(writer, keyPrefix),
    cleanup: async () => {
      for (const [i, keys] of (await keysPerNode(keyPrefix)).entries()) {
        for (const key of keys) await cluster.admins[i]?.del(key)
      }
    },
  }
})

describe('RedisUpdateJournal in cluster mode', () => {
  it('keeps each room on one node and reads back rooms on every node', async () => {
    const keyPrefix = `symphony:${uniqueName('test')}:`
    const journal = open('server-a', keyPrefix)
    try {
      const rooms = Array.from({ length: 16 }, () => uniqueRoom('spread'))
      for (const [i, room] of rooms.entries()) await journal.append(room, new Uint8Array([i]))
      const perNode = await keysPerNode(keyPrefix)
      assert.ok(
        perNode.every((keys) => keys.length > 0),
        `rooms on both nodes: ${perNode.map((k) => k.length)}`,
      )
      for (const [i, room] of rooms.entries()) {
        assert.deepEqual((await journal.read(room)).updates, [new Uint8Array([i])], room)
      }
      // A room's writer set and stream share a node (the `{room}` hash tag): the append script needs both.
      for (const keys of perNode) {
        for (const key of keys.filter((k) => k.endsWith(':server-a'))) {
          assert.ok(keys.includes(key.slice(0, -':server-a'.length)), key)
        }
      }
    } finally {
      await journal.close()
    }
  })

  it('the user reaches only symphony:* keys: the access string is enforced, so it is the user connecting', async () => {
    const journal = open('server-a', `${uniqueName('elsewhere')}:`)
    try {
      await assert.rejects(journal.append(uniqueRoom('denied'), new Uint8Array([1])), /NOPERM/)
    } finally {
      await journal.close()
    }
  })
})
