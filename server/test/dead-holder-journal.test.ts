import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue, useTestCluster } from './helpers/cluster.js'
import { destroyNodeClients, nodeClient } from './helpers/node-client.js'
import { TcpLink } from './helpers/tcp-link.js'

/** A journal writer's lease with these heartbeats: 2 × (interval + timeout), 3 s. */
// RELAY=0: each server holds its own copy, the shape this test is about (issue #48 removes it).
const FAST_HEARTBEAT = { REDIS_HEARTBEAT_INTERVAL_MS: '500', REDIS_HEARTBEAT_TIMEOUT_MS: '1000', RELAY: '0' }
const WRITER_LEASE_MS = 3_000

/**
 * Issue #46: a server acknowledges an edit once its journal confirms it and tells the other
 * servers holding the room a moment later (the pub/sub window). Killed in between, its journal
 * entry is the edit's only copy, and the servers that keep the room loaded never replay it.
 */
describe('an acknowledged edit only its dead server journaled', () => {
  const cluster = useTestCluster()
  afterEach(() => destroyNodeClients())

  it('reaches the servers still holding the room within the lease, and is saved before Redis can lose it', async () => {
    const room = uniqueRoom('dead-holder')
    const [b, c] = await Promise.all([cluster.start('b', FAST_HEARTBEAT), cluster.start('c', FAST_HEARTBEAT)])
    // Server a publishes through a link the test can black-hole; its journal goes straight to Redis.
    const pubsubLink = await TcpLink.open(cluster.redis.port)
    const a = await cluster.start('a', {
      ...FAST_HEARTBEAT,
      PUBSUB: `redis://127.0.0.1:${pubsubLink.port}`,
      JOURNAL: cluster.redis.url,
    })
    try {
      const onB = nodeClient(b.wsUrl).enter(room)
      const onC = nodeClient(c.wsUrl).enter(room)
      const writer = nodeClient(a.wsUrl).enter(room)
      await Promise.all([onB.whenSynced(), onC.whenSynced(), writer.whenSynced()])
      writer.doc.getText('t').insert(0, 'before ')
      await eventually(() => onC.doc.getText('t').toString() === 'before ', 'the servers share the room')

      // The edit is acknowledged (journaled); its publish never leaves, and its server dies.
      pubsubLink.blackhole()
      writer.doc.getText('t').insert(7, 'acknowledged')
      await eventually(() => writer.syncStatus === 'synchronized', 'the edit acknowledged')
      a.child.kill('SIGKILL')
      await a.exited
      await destroyNodeClients() // its user never sends it again: what a acknowledged is on the servers
      assert.equal(b.child.exitCode, null)

      const reader = nodeClient(b.wsUrl).enter(room)
      await eventually(
        () => reader.doc.getText('t').toString() === 'before acknowledged',
        'a fresh reader of a server still holding the room sees the edit',
        WRITER_LEASE_MS + 8_000,
      )
      assert.ok(metricValue(await b.metrics(), 'symphony_journal_adopted_updates_total') > 0)

      // Redis restarts empty: the dead server's stream, the edit's only copy in Redis, is gone.
      await cluster.redis.restart()
      await eventually(
        async () => (await cluster.snapshotDoc(room)).getText('t').toString() === 'before acknowledged',
        'saved in a snapshot at once',
        10_000,
      )
      for (const server of [b, c]) server.child.kill('SIGKILL') // no final save: what S3 holds is all
      await Promise.all([b.exited, c.exited])
      const d = await cluster.start('d', { RELAY: '0' })
      const cold = nodeClient(d.wsUrl).enter(room)
      await cold.whenSynced()
      assert.equal(cold.doc.getText('t').toString(), 'before acknowledged', 'nothing lost after the restart')
    } finally {
      pubsubLink.close()
    }
  })
})
