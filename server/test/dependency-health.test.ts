import assert from 'node:assert/strict'
import { after, afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { type ClusterServer, metricValue, useTestCluster } from './helpers/cluster.js'
import { closed, openRaw } from './helpers/raw-socket.js'
import { requireTestServices } from './helpers/services.js'
import { TcpLink } from './helpers/tcp-link.js'

interface DependencyState {
  ok: boolean
  error?: string
  since?: string
}
interface HealthBody {
  status: string
  ready: boolean
  dependencies: Record<string, DependencyState>
}

async function health(server: ClusterServer): Promise<{ status: number; body: HealthBody }> {
  const response = await fetch(`http://127.0.0.1:${server.port}/healthz`)
  return { status: response.status, body: (await response.json()) as HealthBody }
}

const until = (check: () => Promise<boolean>, message: string) => eventually(check, message, 20_000)

/** Real server processes whose Redis or DynamoDB goes away: /healthz and /metrics must say so. */
describe('dependency health of a real server', () => {
  const cluster = useTestCluster()
  const links: TcpLink[] = []
  afterEach(() => destroyClients())
  after(() => {
    for (const link of links) link.close()
  })

  it('Redis cut off: /healthz names the journal failing (still 200), errors counted, then recovers', async () => {
    const redis = await TcpLink.open(cluster.redis.port)
    links.push(redis)
    const server = await cluster.start('health-redis', { PUBSUB: `redis://127.0.0.1:${redis.port}` })
    const client = await connectSynced(server.wsUrl, uniqueRoom('health'))
    client.doc.getText('t').insert(0, 'before')
    await until(async () => (await health(server)).body.status === 'ok', 'every dependency is ok')
    const up = async (dependency: string) =>
      metricValue(await server.metrics(), `symphony_dependency_up{dependency="${dependency}"}`)
    assert.equal(await up('journal'), 1)
    assert.deepEqual(Object.keys((await health(server)).body.dependencies).sort(), [
      'journal',
      'metadata',
      'registry',
      'snapshots',
    ])

    redis.cut()
    await until(
      async () => (await health(server)).body.dependencies.journal?.ok === false,
      '/healthz names the journal',
    )
    client.doc.getText('t').insert(6, ' during')
    const during = await health(server)
    assert.equal(during.status, 200, 'a Redis outage must not fail every task at the load balancer')
    assert.equal(during.body.status, 'degraded')
    assert.equal(during.body.ready, true)
    // The action and an error code, never a message naming hosts or addresses (/healthz is public).
    assert.match(during.body.dependencies.journal?.error ?? '', /^[a-z]+: [A-Za-z0-9_.-]+$/)
    assert.doesNotMatch(JSON.stringify(during.body), /127\.0\.0\.1|localhost/)
    assert.ok(Date.parse(during.body.dependencies.journal?.since ?? '') > 0, 'since when, as an ISO time')
    assert.equal(during.body.dependencies.snapshots?.ok, true, 'S3 is fine')
    await until(
      async () => metricValue(await server.metrics(), 'symphony_journal_failures_total{action="append"}') > 0,
      'the edit made during the cut failed to journal, counted',
    )
    assert.equal(await up('journal'), 0)

    redis.restore()
    await until(async () => (await health(server)).body.status === 'ok', 'the journal recovers')
    const recovered = await health(server)
    assert.ok(Date.parse(recovered.body.dependencies.journal?.since ?? '') > 0, 'ok again since')
    assert.equal(await up('journal'), 1)
  })

  it('DynamoDB unreachable: an owned room serves on, a new one waits then 1013, registry errors counted, /healthz names the registry, which recovers', async () => {
    const dynamo = await TcpLink.open(Number(new URL(requireTestServices().awsEndpoint).port))
    links.push(dynamo)
    const server = await cluster.start('health-ddb', {
      AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${dynamo.port}`,
      JOIN_WAIT_MS: '1500',
      REGISTRY_WAIT_MS: '500',
    })
    assert.equal((await health(server)).body.dependencies.registry?.ok, true, 'no call failed yet')
    const owned = uniqueRoom('owned-before')
    const client = await connectSynced(server.wsUrl, owned)
    dynamo.cut()
    // The room is this server's: its journal is fenced in Redis, so it serves on without the registry.
    client.doc.getText('t').insert(0, 'still works')
    const joiner = await connectSynced(server.wsUrl, owned)
    await eventually(() => joiner.doc.getText('t').toString() === 'still works', 'a joiner gets the room')
    // A room no one owns cannot be claimed: served by no one rather than by two.
    const fresh = uniqueRoom('no-registry')
    const waiting = await openRaw(`${server.wsUrl}/${fresh}`)
    assert.equal((await closed(waiting)).code, CloseCode.TryAgainLater)
    await until(
      async () => metricValue(await server.metrics(), 'symphony_room_claims_total{outcome="failed"}') > 0,
      'the failed claims are counted',
    )
    const { status, body } = await health(server)
    assert.equal(status, 200)
    assert.equal(body.status, 'degraded')
    assert.equal(body.dependencies.registry?.ok, false)
    assert.match(body.dependencies.registry?.error ?? '', /^(claim|lookup|probe|refresh)/)
    const up = async () =>
      metricValue(await server.metrics(), 'symphony_dependency_up{dependency="registry"}')
    assert.equal(await up(), 0)

    dynamo.restore()
    await until(async () => (await health(server)).body.dependencies.registry?.ok === true, 'recovered')
    assert.equal(await up(), 1)
    const later = await connectSynced(server.wsUrl, fresh)
    later.doc.getText('t').insert(0, 'claimed now')
    await eventually(() => later.doc.getText('t').length === 11, 'the new room is served')
  })

  it('says which commit runs, from SYMPHONY_COMMIT', async () => {
    const server = await cluster.start('health-build', { SYMPHONY_COMMIT: 'c0ffee1' })
    const text = await server.metrics()
    assert.match(
      text,
      new RegExp(
        `^symphony_build_info\\{version="[^"]+",node="${process.version}",commit="c0ffee1"\\} 1$`,
        'm',
      ),
    )
  })
})
