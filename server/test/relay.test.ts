import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, internalAuthorization } from '@symphony/client/wire'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import { MemoryJournalTable, MemoryUpdateJournal } from '../src/adapters/memory-update-journal.js'
import type { Limits } from '../src/config.js'
import type { LeaseLapse } from '../src/ports/room-registry.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { deferred } from './helpers/deferred.js'
import { destroyNodeClients, nodeClient, recordErrors } from './helpers/node-client.js'
import { closed, openRaw } from './helpers/raw-socket.js'
import { registryAround } from './helpers/registries.js'
import { startTestServer, stopTestServers, TEST_INTERNAL, type TestServer } from './helpers/test-server.js'

/** Servers of one process sharing the registry, the journal and the snapshots, relaying. */
async function relayingServers(
  names: string[],
  limits: Partial<Limits> = {},
  options: { apiSecret?: string } = {},
): Promise<TestServer[]> {
  const shared = {
    ...options,

    registryTable: new MemoryRegistryTable(),
    internal: TEST_INTERNAL,
  }
  const journals = new MemoryJournalTable()
  const snapshots = new MemorySnapshotStore()
  const servers: TestServer[] = []
  for (const serverId of names) {
    const journal = new MemoryUpdateJournal(journals)
    servers.push(await startTestServer({ ...shared, serverId, limits, adapters: { journal, snapshots } }))
  }
  return servers
}

const API_SECRET = 'api-secret-for-relay-tests-0123456789'

/** `/api/v1/rooms/<room><rest>` on `server`, with the API secret unless `init` sends its own. */
function api(server: TestServer, room: string, rest: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}${rest}`, {
    ...init,
    headers: { authorization: `Bearer ${API_SECRET}`, ...(init.headers as Record<string, string>) },
  })
}

function postUpdate(server: TestServer, room: string, update: Uint8Array): Promise<Response> {
  return api(server, room, '/update', {
    method: 'POST',
    body: new Blob([update as Uint8Array<ArrayBuffer>]),
    headers: { 'content-type': 'application/octet-stream' },
  })
}

/** Issue #48: one copy per room; a client of a room another server owns is relayed there. */
describe('a room owned by one server, its clients on others relayed', () => {
  afterEach(async () => {
    destroyClients()
    await destroyNodeClients()
    await stopTestServers()
  })

  it('holds the room once: edits, presence and acknowledgements cross the relay both ways', async () => {
    const [a, b] = await relayingServers(['a', 'b'])
    if (!a || !b) throw new Error('two servers')
    const room = uniqueRoom('relay')
    const onA = nodeClient(a.wsUrl).enter(room)
    await onA.whenSynced()
    const onB = nodeClient(b.wsUrl).enter(room)
    await onB.whenSynced()
    assert.equal(a.server.manager.roomCount, 1, 'the owner holds the room')
    assert.equal(b.server.manager.roomCount, 0, 'the edge holds no copy')

    onB.doc.getText('t').insert(0, 'from b ')
    await eventually(() => onA.doc.getText('t').toString() === 'from b ', 'b → a')
    await eventually(() => onB.syncStatus === 'synchronized', 'b’s edit acknowledged through the relay')
    const alsoOnB = nodeClient(b.wsUrl).enter(room)
    await alsoOnB.whenSynced()
    onA.doc.getText('t').insert(7, 'from a') // one fanout message to b, for both its clients
    await eventually(() => onB.doc.getText('t').toString() === 'from b from a', 'a → b')
    await eventually(() => alsoOnB.doc.getText('t').toString() === 'from b from a', 'a → b’s other client')

    onB.presence.set({ name: 'bea' })
    await eventually(
      () => onA.presence.others().some((other) => (other as { name?: string }).name === 'bea'),
      'b’s presence reaches a',
    )
    assert.equal(b.server.manager.roomCount, 0, 'still no copy on the edge')
    const gauges = async (server: TestServer) => {
      const text = await (await fetch(`${server.httpUrl}/metrics`)).text()
      const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
      return [
        'symphony_rooms',
        'symphony_connections',
        'symphony_rooms_relayed',
        'symphony_connections_relayed',
      ].map(value)
    }
    assert.deepEqual(await gauges(a), [1, 3, 0, 0], 'a owns the room: its client and the two relayed to it')
    assert.deepEqual(await gauges(b), [0, 0, 1, 2], 'b relays the room, with its two clients')
  })

  it('sends the owner’s clients on when it stops, and the room carries on from the next owner', async () => {
    const [a, b] = await relayingServers(['a', 'b'])
    if (!a || !b) throw new Error('two servers')
    const room = uniqueRoom('relay-handover')
    const first = nodeClient(a.wsUrl).enter(room)
    await first.whenSynced()
    const relayed = nodeClient(b.wsUrl).enter(room)
    await relayed.whenSynced()
    relayed.doc.getText('t').insert(0, 'kept')
    await eventually(() => relayed.syncStatus === 'synchronized', 'acknowledged by the owner')
    await first.close()
    await a.stop() // saves, releases the room, closes its relay links
    await eventually(() => b.server.manager.roomCount === 1, 'b owns the room once its client came back')
    relayed.doc.getText('t').insert(4, ' and more')
    await eventually(() => relayed.syncStatus === 'synchronized', 'acknowledged by the new owner')
    const reader = nodeClient(b.wsUrl).enter(room)
    await reader.whenSynced()
    assert.equal(reader.doc.getText('t').toString(), 'kept and more')
  })

  it('closes a relayed client that stops reading on its own server (4003), as its owner would', async () => {
    const [a, b] = await relayingServers(['a', 'b'], { maxBufferedBytes: 256 * 1024 })
    if (!a || !b) throw new Error('two servers')
    const room = uniqueRoom('relay-slow')
    const writer = await connectSynced(a.wsUrl, room)
    const slow = await openRaw(`${b.wsUrl}/${room}`)
    const slowClosed = closed(slow)
    const rawSlow = (slow as unknown as { _socket: import('node:net').Socket })._socket
    rawSlow.pause() // stop reading: the edge's socket backlog grows
    const ownerDroppedIt = () => a.server.manager.loadedRoom(room)?.connections.size === 1
    await eventually(() => a.server.manager.loadedRoom(room)?.connections.size === 2, 'relayed in')
    for (let i = 0; i < 2_000 && !ownerDroppedIt(); i++) {
      writer.doc.getMap('m').set('blob', randomBytes(48 * 1024).toString('base64'))
      if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve))
    }
    await eventually(ownerDroppedIt, 'the edge closed it and its session left the owner')
    rawSlow.resume()
    assert.ok([CloseCode.SlowConsumer, 1006].includes((await slowClosed).code))
    const metric = await b.server.metrics.registry.getSingleMetricAsString(
      'symphony_connections_closed_by_server_total',
    )
    assert.match(metric, /code="SlowConsumer"} 1/)
    assert.equal(writer.provider.wsconnected, true, 'the writer is untouched')
  })

  it('answers the REST API on every server: a room another server owns is read and written there', async () => {
    const [a, b] = await relayingServers(
      ['a', 'b'],
      { maxMessageBytes: 64 * 1024 },
      { apiSecret: API_SECRET },
    )
    if (!a || !b) throw new Error('two servers')
    const room = uniqueRoom('relay-api')
    const onA = nodeClient(a.wsUrl).enter(room)
    await onA.whenSynced()
    onA.doc.getMap('m').set('from', 'a')

    const written = new Y.Doc()
    written.getMap('m').set('via', 'b')
    assert.equal((await postUpdate(b, room, Y.encodeStateAsUpdate(written))).status, 204)
    await eventually(
      () => onA.doc.getMap('m').get('via') === 'b',
      'the write through b reaches the owner’s client',
    )
    const read = await api(b, room, '/document')
    assert.equal(read.status, 200)
    assert.deepEqual(await read.json(), { m: { from: 'a', via: 'b' } })
    assert.equal(b.server.manager.roomCount, 0, 'b loaded no copy to answer')

    // The owner's answers come back as they are: its limits, and the caller's secret checked first.
    const tooBig = await postUpdate(b, room, new Uint8Array(64 * 1024 + 1))
    assert.equal(tooBig.status, 413)
    assert.equal(((await tooBig.json()) as { error: { code: string } }).error.code, 'UPDATE_TOO_LARGE')
    const wrongSecret = await api(b, room, '/document', {
      headers: { authorization: 'Bearer nope', 'x-symphony-forwarded': '1' }, // only the internal port's token counts
    })
    assert.equal(wrongSecret.status, 401)

    assert.equal((await api(b, room, '', { method: 'DELETE' })).status, 204)
    await eventually(() => a.server.manager.roomCount === 0, 'the owner deleted the room')
  })

  it('asks the registry once for a burst of joins of one room, not twice per client', async () => {
    let claims = 0
    const registry = registryAround('burst', (call, pass) => {
      if (call === 'claim') claims++
      return pass()
    })
    const t = await startTestServer({
      internal: TEST_INTERNAL,
      adapters: { registry },
    })
    const room = uniqueRoom('burst')
    const clients = Array.from({ length: 8 }, () => nodeClient(t.wsUrl).enter(room))
    await Promise.all(clients.map((client) => client.whenSynced()))
    assert.equal(claims, 1, 'one claim for the burst')
  })

  it('asks the registry again when its check after a lease lapse goes unanswered: a copy nobody writes to does not stay', async () => {
    const registryTable = new MemoryRegistryTable()
    const [journals, snapshots] = [new MemoryJournalTable(), new MemorySnapshotStore()]
    const adapters = () => ({ journal: new MemoryUpdateJournal(journals), snapshots })
    let hangLookup = false
    let toldLapse: ((lapse: LeaseLapse) => void) | undefined
    const around = registryAround(
      'a',
      (call, pass) => {
        if (call !== 'ownerOf' || !hangLookup) return pass()
        hangLookup = false
        return new Promise(() => {}) // this one lookup never answers
      },
      registryTable,
    )
    const registry = {
      ...around,
      onLeaseLapsed: (listener: (lapse: LeaseLapse) => void) => {
        toldLapse = listener
        around.onLeaseLapsed(listener)
      },
    }
    const a = await startTestServer({
      serverId: 'a',
      internal: TEST_INTERNAL,
      registryWaitMs: 100,
      adapters: { ...adapters(), registry },
    })
    const b = await startTestServer({
      serverId: 'b',
      registryTable,
      internal: TEST_INTERNAL,
      adapters: adapters(),
    })
    const room = uniqueRoom('unanswered-check')
    const idle = nodeClient(a.wsUrl).enter(room)
    await idle.whenSynced()
    assert.equal(a.server.manager.roomCount, 1, 'a owns the room')
    // a's lease lapses (a stall, say) and b takes the room meanwhile.
    const lease = registryTable.servers.get('a')
    if (!lease) throw new Error("a's lease is in the table")
    lease.expiresAt = 0
    const onB = nodeClient(b.wsUrl).enter(room)
    await onB.whenSynced()
    assert.equal(b.server.manager.roomCount, 1, 'b owns the room now')
    // a's renewal after the lapse makes it check; that first lookup goes unanswered.
    hangLookup = true
    toldLapse?.('renewed')
    await eventually(() => a.server.manager.roomCount === 0, 'a gave its stale copy up', 5_000)
  })

  it('relays a client whose room another server claimed while this one looked it up, rather than closing it', async () => {
    const registryTable = new MemoryRegistryTable()
    const [journals, snapshots] = [new MemoryJournalTable(), new MemorySnapshotStore()]
    const adapters = () => ({ journal: new MemoryUpdateJournal(journals), snapshots })
    const a = await startTestServer({
      serverId: 'a',
      registryTable,
      internal: TEST_INTERNAL,
      adapters: adapters(),
    })
    // B's claims wait until A owns the room: B's lookup gives up first (REGISTRY_WAIT_MS), so its
    // client starts to join here, and the load that follows finds A owning the room.
    const aOwns = deferred()
    const registry = registryAround(
      'b',
      async (call, pass) => {
        if (call === 'claim') await aOwns.promise
        return pass()
      },
      registryTable,
    )
    const b = await startTestServer({
      serverId: 'b',
      internal: TEST_INTERNAL,
      registryWaitMs: 100,
      adapters: { ...adapters(), registry },
    })
    const room = uniqueRoom('moved')
    const onB = nodeClient(b.wsUrl).enter(room)
    const errors = recordErrors(onB)
    onB.doc.getText('t').insert(0, 'sent while it waited ')
    await eventually(() => b.server.manager.roomState(room) === 'loading', 'B loads the room for its client')
    const onA = nodeClient(a.wsUrl).enter(room)
    await onA.whenSynced()
    aOwns.resolve()
    await onB.whenSynced()
    await eventually(() => onA.doc.getText('t').toString() === 'sent while it waited ', 'b’s edit reached A')
    onA.doc.getText('t').insert(0, '> ')
    await eventually(() => onB.doc.getText('t').toString() === '> sent while it waited ', 'a → b')
    const closes = await b.server.metrics.registry.getSingleMetricAsString(
      'symphony_connections_closed_by_server_total',
    )
    assert.doesNotMatch(closes, /TryAgainLater/, 'never closed: its socket was relayed to the owner')
    assert.deepEqual(errors, [])
    assert.equal(b.server.manager.roomCount, 0, 'B holds no copy')
  })

  it('opens a relay link only on its path, with the internal token', async () => {
    const [a] = await relayingServers(['a'])
    const address = a?.server.internalAddress
    if (!address) throw new Error('an internal port')
    const refusal = (url: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const socket = new WebSocket(url, { headers })
        socket.on('unexpected-response', (request, response) => {
          request.destroy() // a listener here must end the request itself
          resolve(response.statusCode ?? 0)
        })
        socket.on('open', () => reject(new Error(`${url} opened`)))
        socket.on('error', () => {})
      })
    const token = { authorization: internalAuthorization('internal-token-0123456789') }
    assert.equal(await refusal(`ws://${address}/internal/relay`, {}), 404, 'no token')
    assert.equal(await refusal(`ws://${address}/internal/relay`, { authorization: 'Bearer wrong' }), 404)
    assert.equal(await refusal(`ws://${address}/internal/other`, token), 404, 'another path')
  })
})
