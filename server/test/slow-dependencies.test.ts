import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import {
  connectClient,
  destroyClients,
  eventually,
  firstCloseCode,
  synced,
  uniqueRoom,
} from './helpers/clients.js'
import {
  CLUSTER_API_SECRET,
  type ClusterServer,
  metricValue,
  roomApi,
  useTestCluster,
} from './helpers/cluster.js'
import { closed, openRaw, terminateRawSockets } from './helpers/raw-socket.js'
import { requireTestServices } from './helpers/services.js'
import { TcpLink } from './helpers/tcp-link.js'
import { testCertificate } from './helpers/test-certificate.js'

const until = (check: () => boolean | Promise<boolean>, message: string, timeoutMs = 60_000) =>
  eventually(check, message, timeoutMs)

/**
 * Slow dependencies delay a room's load, never refuse its clients (issue #37): S3 and DynamoDB
 * (moto) reached through a relay that delays every chunk, with real server processes and clients.
 */
describe('slow dependencies', () => {
  const cluster = useTestCluster()
  const links: TcpLink[] = []
  afterEach(() => {
    destroyClients()
    terminateRawSockets()
  })
  after(() => {
    for (const link of links) link.close()
  })

  /** A relay in front of moto, and a server reaching S3 and DynamoDB through it (`tls`: over HTTPS, as on AWS). */
  async function serverBehindLink(name: string, env: Record<string, string>, { tls = false } = {}) {
    const certificate = tls ? testCertificate() : null
    const link = await TcpLink.open(
      Number(new URL(requireTestServices().awsEndpoint).port),
      certificate ?? undefined,
    )
    links.push(link)
    const server = await cluster.start(name, {
      AWS_ENDPOINT_URL: `${certificate ? 'https' : 'http'}://127.0.0.1:${link.port}`,
      ...(certificate ? { NODE_EXTRA_CA_CERTS: certificate.path } : {}),
      ...env,
    })
    return { link, server }
  }

  const metric = async (server: ClusterServer, sample: string) => metricValue(await server.metrics(), sample)

  it('more calls than sockets on a slow store: every load waits its turn and every client syncs; /metrics shows the wait', async () => {
    // Two sockets and a 300 ms connect timeout: before, the SDK's connect timeout also ran while
    // a call queued for a socket, so the queue's tail failed without reaching the store.
    const { link, server } = await serverBehindLink('queue', {
      AWS_MAX_SOCKETS: '2',
      AWS_CONNECT_TIMEOUT_MS: '300',
      // The registry (DynamoDB) is behind the same slow link: its claims queue for the two sockets too.
      REGISTRY_WAIT_MS: '60000',
    })
    const rooms = await Promise.all(
      Array.from({ length: 8 }, (_, i) => cluster.storedRoom(`queue-${i}`, `saved ${i}`)),
    )
    link.slow(150)
    const clients = rooms.flatMap((room) => [
      connectClient(server.wsUrl, room),
      connectClient(server.wsUrl, room),
    ])
    await until(
      async () => (await metric(server, 'symphony_join_waiting')) > 0,
      'clients wait for their rooms',
    )
    await Promise.all(clients.map((client) => synced(client)))
    for (const [i, client] of clients.entries()) {
      assert.equal(client.doc.getText('t').toString(), `saved ${Math.floor(i / 2)}`)
    }
    const text = await server.metrics()
    const calls = metricValue(text, 'symphony_room_load_wait_seconds_count{dependency="snapshots"}')
    const waited = metricValue(text, 'symphony_room_load_wait_seconds_sum{dependency="snapshots"}')
    assert.ok(calls >= rooms.length * 2, `${calls} snapshot store calls`)
    // Each call crosses the relay both ways.
    assert.ok(waited >= calls * 0.3, `snapshot calls waited ${waited} s in all`)
    assert.equal(metricValue(text, 'symphony_room_load_retries_total'), 0, 'no call failed')
    assert.equal(metricValue(text, 'symphony_join_wait_seconds_count'), clients.length)
    assert.equal(metricValue(text, 'symphony_join_waits_expired_total'), 0)
    assert.equal(metricValue(text, 'symphony_join_waiting'), 0)
  })

  it('a store that is down: a client is closed (1013) only when its own wait runs out, and its reconnection is served once the store is back', async () => {
    const { link, server } = await serverBehindLink('down', {
      API_SECRET: CLUSTER_API_SECRET,
      JOIN_WAIT_MS: '1000',
      ROOM_LOAD_RETRY_MAX_MS: '300',
      ROOM_GRACE_MS: '5000',
    })
    const room = await cluster.storedRoom('down', 'kept')
    link.cut()
    const raw = await openRaw(`${server.wsUrl}/${room}`)
    const gone = closed(raw)
    await until(async () => (await metric(server, 'symphony_join_waiting')) === 1, 'the client waits')
    assert.deepEqual(await gone, {
      code: CloseCode.TryAgainLater,
      reason: 'the room did not load within 1000 ms; retry',
    })
    assert.equal(await metric(server, 'symphony_join_waits_expired_total'), 1)
    // The REST API waits as long, and answers 503.
    const answer = await roomApi(server, room, '/document')
    assert.equal(answer.status, 503)
    assert.deepEqual(((await answer.json()) as { error: { code: string } }).error.code, 'ROOM_UNAVAILABLE')
    // A provider reconnects after each 1013, joining the load that retries while anyone waits.
    const client = connectClient(server.wsUrl, room)
    await until(
      async () => (await metric(server, 'symphony_join_waits_expired_total')) >= 2,
      "the provider's first wait ran out too",
    )
    // Retried while the provider waited (the raw client may have left before the first failure).
    await until(async () => (await metric(server, 'symphony_room_load_retries_total')) > 0, 'a retried load')
    link.restore()
    await synced(client)
    await until(() => client.doc.getText('t').toString() === 'kept', 'the stored state')
  })

  it('a store slower than the wait: the reconnecting client joins the load still going, which loads the room once', async () => {
    const { link, server } = await serverBehindLink('slower', { JOIN_WAIT_MS: '700', ROOM_GRACE_MS: '5000' })
    const room = await cluster.storedRoom('slower', 'slowly')
    // A head and a get, each 800 ms or more: the load outlasts a client's 700 ms wait.
    link.slow(400)
    const client = connectClient(server.wsUrl, room)
    await synced(client)
    assert.equal(client.doc.getText('t').toString(), 'slowly')
    assert.ok((await metric(server, 'symphony_join_waits_expired_total')) >= 1, 'its first wait ran out')
    assert.equal(
      await metric(server, 'symphony_room_loads_total{source="snapshot"}'),
      1,
      'one load served it',
    )
    link.restore()
  })

  it('a snapshot bigger than a megabyte saves over HTTPS on a link too thin to send it within AWS_IDLE_TIMEOUT_MS', async () => {
    // Node may count a socket idle while one big write drains (a plain HTTPS client writing 3 MB
    // at 1 MB/s under a 300 ms socket timeout times out at once): a save that did would fail with
    // its bytes still moving, and again on every retry, so big bodies go without the idle timeout.
    const { link, server } = await serverBehindLink(
      'thin',
      { AWS_IDLE_TIMEOUT_MS: '300', ROOM_GRACE_MS: '100' },
      { tls: true },
    )
    const room = uniqueRoom('thin')
    const client = connectClient(server.wsUrl, room)
    await synced(client)
    const text = randomBytes(1536 * 1024).toString('hex') // 3 MiB that no compression shrinks
    client.doc.getText('t').insert(0, text)
    const reader = connectClient(server.wsUrl, room)
    await until(() => reader.doc.getText('t').length === text.length, 'the server holds it')
    link.throttle(1024 * 1024)
    // The room unloads: its final save goes through the thin link.
    client.destroy()
    reader.destroy()
    await until(async () => (await cluster.snapshotDoc(room)).getText('t').length === text.length, 'saved')
    link.restore()
  })

  it('a store call lost on the way fails after AWS_IDLE_TIMEOUT_MS of silence: a room deleted meanwhile leaves its owner and comes back empty', async () => {
    const settings = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '100', ROOM_GRACE_MS: '5000' }
    const deleter = await cluster.start('lost-call-deleter', settings)
    // An hour for the whole call: only the idle timeout can end a request that was swallowed.
    const { link, server } = await serverBehindLink('lost-call', {
      ...settings,
      AWS_REQUEST_TIMEOUT_MS: '3600000',
      AWS_IDLE_TIMEOUT_MS: '500',
    })
    const room = await cluster.storedRoom('lost-call', 'old ')
    // This server owns the room (its client came first); the deleter's request is sent on to it.
    const here = connectClient(server.wsUrl, room)
    await synced(here)
    const there = connectClient(deleter.wsUrl, room)
    await synced(there)
    assert.equal((await cluster.ownerItem(room))?.serverId, 'lost-call')
    const closedHere = firstCloseCode(here)
    link.blackhole()
    here.doc.getText('t').insert(4, 'unsaved')
    await until(() => link.dropped > 0, 'a snapshot save swallowed by the link')
    link.restore() // the swallowed call stays hung: its socket hears nothing ever again
    // Deleted now: its tombstone goes through new connections; the room goes once the hung save ends.
    assert.equal((await roomApi(deleter, room, '', { method: 'DELETE' })).status, 204)
    await until(() => closedHere() !== null, 'the deletion reached this server')
    assert.equal(closedHere(), CloseCode.RoomDeleted)
    // The room leaves this server only once its save in flight is over; joiners wait for that.
    const fresh = connectClient(server.wsUrl, room)
    await until(() => fresh.provider.synced, 'the fresh client synced (the lost call ended)', 30_000)
    assert.equal(fresh.doc.getText('t').toString(), '', 'the new incarnation, empty')
  })
})
