import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import { MemoryJournalTable, MemoryUpdateJournal } from '../src/adapters/memory-update-journal.js'
import type { ServerEvent, ServerEventOf, ServerEvents, ServerEventType } from '../src/core/server-events.js'
import type { JournalPosition } from '../src/ports/update-journal.js'
import { refuse } from '../src/server-hooks.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, connectSynced, eventually, synced, uniqueRoom } from './helpers/clients.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { refusedStatus } from './helpers/raw-socket.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { startTestCluster, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'
const auth = { authorization: `Bearer ${API_SECRET}` }

afterEach(async () => {
  await cleanUpAfterTest()
})

const EVERY_TYPE: ServerEventType[] = [
  'room.loaded',
  'room.unloaded',
  'room.deleted',
  'connection.joined',
  'connection.left',
  'connection.refused',
  'document.changed',
  'document.restored',
  'snapshot.saved',
  'snapshot.failed',
  'journal.failed',
  'update.refused',
]

/** Every event of `room` (or of no room) the stream reports from now on, in order. */
function record(events: ServerEvents, room: string): ServerEvent[] {
  const seen: ServerEvent[] = []
  for (const type of EVERY_TYPE) {
    events.on(type, (event) => {
      if (event.room === room || event.room === null) seen.push(event)
    })
  }
  return seen
}

function ofType<T extends ServerEventType>(seen: ServerEvent[], type: T): ServerEventOf<T>[] {
  return seen.filter((event): event is ServerEventOf<T> => event.type === type)
}

function api(t: TestServer, room: string, rest: string, init: RequestInit = {}) {
  return fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}${rest}`, {
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string>) },
  })
}

/** One writer's document: each update sets `key` in the map `m` over the writer's previous ones. */
function writer() {
  const doc = new Y.Doc()
  return (key: string, value: string): Uint8Array => {
    doc.getMap('m').set(key, value)
    return Y.encodeStateAsUpdate(doc)
  }
}

describe('the event stream (server.events)', () => {
  it("reports a client's session in order: joined, loaded, changed by that client, left, saved, unloaded", async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('events')
    const seen = record(t.server.events, room)
    const token = await signToken({ room, access: 'rw', sub: 'alice', name: 'Alice' })
    const client = connectClient(t.wsUrl, room, { token })
    await synced(client)
    client.doc.getText('t').insert(0, 'hello')
    await eventually(() => ofType(seen, 'document.changed').length === 1, 'the change is reported')
    client.destroy()
    await eventually(() => ofType(seen, 'room.unloaded').length === 1, 'the room unloads')

    assert.deepEqual(
      seen.map((event) => event.type),
      [
        'connection.joined',
        'room.loaded',
        'document.changed',
        'connection.left',
        'snapshot.saved',
        'room.unloaded',
      ],
    )
    const [joined] = ofType(seen, 'connection.joined')
    const [left] = ofType(seen, 'connection.left')
    const who = { room, userId: 'alice', name: 'Alice', info: null, access: 'rw' }
    assert.deepEqual(
      { ...joined, connectionId: '', at: 0 },
      { type: 'connection.joined', ...who, connectionId: '', at: 0 },
    )
    assert.deepEqual({ ...left, at: 0 }, { ...joined, type: 'connection.left', at: 0 })
    assert.equal(ofType(seen, 'room.loaded')[0]?.source, 'empty')
    const [changed] = ofType(seen, 'document.changed')
    assert.deepEqual(changed?.origin, {
      kind: 'client',
      connectionId: joined?.connectionId,
      userId: 'alice',
      name: 'Alice',
    })
    assert.equal(changed?.document.getText('t').toString(), 'hello', 'the live document, changed')
    const [unloaded] = ofType(seen, 'room.unloaded')
    assert.ok((unloaded?.bytes ?? 0) > 0)
    assert.equal(typeof unloaded?.changedAt, 'number', 'a client changed it here')
    assert.ok((ofType(seen, 'snapshot.saved')[0]?.seconds ?? -1) >= 0)

    const again = connectClient(t.wsUrl, room, { token })
    await synced(again)
    assert.equal(ofType(seen, 'room.loaded')[1]?.source, 'snapshot', 'loaded again from its snapshot')
  })

  it("reports the REST API's write, a restore and a deletion, each change with its origin", async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const room = uniqueRoom('events-api')
    const seen = record(t.server.events, room)
    const client = await connectSynced(t.wsUrl, room)
    const post = (update: Uint8Array) =>
      api(t, room, '/update', {
        method: 'POST',
        body: new Blob([update as Uint8Array<ArrayBuffer>]),
        headers: { 'content-type': 'application/octet-stream' },
      })
    const setting = writer()
    assert.equal((await post(setting('title', 'first'))).status, 204)
    await t.server.manager.save(room)
    assert.equal((await post(setting('title', 'second'))).status, 204)
    await eventually(() => client.doc.getMap('m').get('title') === 'second', 'the client has the REST writes')
    assert.deepEqual(
      ofType(seen, 'document.changed').map((event) => event.origin),
      [{ kind: 'rest' }, { kind: 'rest' }],
    )

    const listed = (await (await api(t, room, '/versions')).json()) as { versions: { id: string }[] }
    const first = listed.versions.at(-1)?.id ?? ''
    const restored = await api(t, room, `/versions/${encodeURIComponent(first)}/restore`, { method: 'POST' })
    assert.equal(restored.status, 200)
    await eventually(() => client.doc.getMap('m').get('title') === 'first', 'the client has the restore')
    assert.deepEqual(ofType(seen, 'document.changed').at(-1)?.origin, { kind: 'restore', version: first })
    assert.deepEqual(
      ofType(seen, 'document.restored').map(({ room, version }) => ({ room, version })),
      [{ room, version: first }],
    )

    assert.equal((await api(t, room, '', { method: 'DELETE' })).status, 204)
    assert.deepEqual(
      ofType(seen, 'room.deleted').map((event) => event.room),
      [room],
    )
    assert.ok(
      seen.findIndex((event) => event.type === 'room.unloaded') <
        seen.findIndex((event) => event.type === 'room.deleted'),
      'the deleted room unloads first',
    )
  })

  it('reports a change once, on the server that owns the room, with its author, also one relayed to it', async () => {
    const [a, b] = await startTestCluster()
    const room = uniqueRoom('events-owner')
    const onA = record(a.server.events, room)
    const onB = record(b.server.events, room)
    const owner = await connectSynced(a.wsUrl, room)
    const relayed = await connectSynced(b.wsUrl, room)
    relayed.doc.getText('t').insert(0, 'from b')
    await eventually(() => owner.doc.getText('t').toString() === 'from b', 'a’s client has it')
    await eventually(() => ofType(onA, 'document.changed').length > 0, 'a reports it')
    assert.deepEqual(
      ofType(onA, 'document.changed').map((event) => event.origin.kind),
      ['client'],
    )
    assert.deepEqual(ofType(onB, 'document.changed'), [], 'b holds no copy, and reports nothing')
  })

  it('reports refused connections with their code', async () => {
    const t = await startTestServer({ limits: { maxConnectionsPerRoom: 1 } })
    const room = uniqueRoom('events-refused')
    const seen = record(t.server.events, room)
    const refused = await refusedStatus(`${t.wsUrl}/${encodeURIComponent('bad\u0001name')}`)
    assert.equal(refused.status, 400)
    await connectSynced(t.wsUrl, room)
    const second = connectClient(t.wsUrl, room)
    await eventually(() => ofType(seen, 'connection.refused').length === 2, 'both refusals are reported')
    second.destroy()
    assert.deepEqual(
      ofType(seen, 'connection.refused').map(({ room, code }) => ({ room, code })),
      [
        { room: null, code: 'ROOM_NAME_INVALID' },
        { room, code: 'ROOM_FULL' },
      ],
    )
    assert.equal(ofType(seen, 'connection.joined').length, 1, 'the refused one never joined')
  })

  it('reports a failed journal append and a failed snapshot write, then the save that succeeds', async () => {
    const journal = new FailingJournal(new MemoryJournalTable())
    const snapshots = new ControlledSnapshotStore(new MemorySnapshotStore())
    const t = await startTestServer({ adapters: { journal, snapshots } })
    const room = uniqueRoom('events-failures')
    const seen = record(t.server.events, room)
    const client = await connectSynced(t.wsUrl, room)
    snapshots.failSaves = 1
    journal.failAppends = 1
    client.doc.getText('t').insert(0, 'x')
    // A failed append saves a snapshot at once; that first save fails, and its retry succeeds.
    await eventually(() => ofType(seen, 'snapshot.saved').length === 1, 'the retried save succeeds')
    const [journalFailed] = ofType(seen, 'journal.failed')
    assert.equal(journalFailed?.action, 'append')
    assert.equal((journalFailed?.error as Error | undefined)?.message, 'injected append failure')
    assert.equal(journalFailed?.outOfSpace, false)
    const [snapshotFailed] = ofType(seen, 'snapshot.failed')
    assert.equal((snapshotFailed?.error as Error | undefined)?.message, 'injected save failure')
    assert.deepEqual(
      seen
        .map((event) => event.type)
        .filter((type) => type.startsWith('snapshot.') || type.startsWith('journal.')),
      ['journal.failed', 'snapshot.failed', 'snapshot.saved'],
    )
  })

  it("reports a read-only connection's refused update, with its author", async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('events-read-only')
    const seen = record(t.server.events, room)
    const token = await signToken({ room, access: 'ro', sub: 'viewer', name: 'V' })
    const viewer = connectClient(t.wsUrl, room, { token })
    await synced(viewer)
    viewer.doc.getText('t').insert(0, 'not allowed')
    await eventually(() => ofType(seen, 'update.refused').length > 0, 'the refusal is reported')
    const [refused] = ofType(seen, 'update.refused')
    const [joined] = ofType(seen, 'connection.joined')
    assert.equal(refused?.code, 'READ_ONLY')
    assert.deepEqual(refused?.origin, {
      kind: 'client',
      connectionId: joined?.connectionId,
      userId: 'viewer',
      name: 'V',
    })
    assert.equal(ofType(seen, 'document.changed').length, 0, 'nothing changed')
  })

  it("reports an update the app's beforeApply refused, with its author and the code", async () => {
    const t = await startTestServer({ hooks: { beforeApply: () => refuse('titles are read-only') } })
    const room = uniqueRoom('events-before-apply')
    const seen = record(t.server.events, room)
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'refused')
    await eventually(() => ofType(seen, 'update.refused').length === 1, 'the refusal is reported')
    const [refused] = ofType(seen, 'update.refused')
    assert.equal(refused?.code, 'UPDATE_REFUSED')
    assert.equal(refused?.origin.kind, 'client')
    assert.equal(ofType(seen, 'document.changed').length, 0, 'nothing changed')
  })

  it('logs a listener that throws (or rejects); the other listeners and the room go on', async () => {
    const logger = recordingLogger()
    const t = await startTestServer({ logger })
    const room = uniqueRoom('events-throw')
    t.server.events.on('document.changed', () => {
      throw new Error('listener bug')
    })
    t.server.events.on('document.changed', async () => {
      throw new Error('async listener bug')
    })
    const after: string[] = []
    t.server.events.on('document.changed', (event) => void after.push(event.room))
    const a = await connectSynced(t.wsUrl, room)
    const b = await connectSynced(t.wsUrl, room)
    a.doc.getText('t').insert(0, 'still synced')
    await eventually(() => b.doc.getText('t').toString() === 'still synced', 'the change reaches b')
    await eventually(
      () => logger.entries.filter((entry) => entry.message === 'an event listener failed').length === 2,
      'both failures are logged',
    )
    assert.deepEqual(after, [room], 'the listener after them still ran')
  })

  it('stops telling a listener once it unsubscribed', async () => {
    const t = await startTestServer()
    const room = uniqueRoom('events-off')
    const joined: string[] = []
    const off = t.server.events.on('connection.joined', (event) => void joined.push(event.connectionId))
    await connectSynced(t.wsUrl, room)
    off()
    off() // twice is harmless
    const seen = record(t.server.events, room)
    await connectSynced(t.wsUrl, room)
    await eventually(() => ofType(seen, 'connection.joined').length === 1, 'the second join is reported')
    assert.equal(joined.length, 1)
  })
})

/** A journal whose next `failAppends` appends fail. */
class FailingJournal extends MemoryUpdateJournal {
  failAppends = 0

  override async append(room: string, update: Uint8Array): Promise<JournalPosition> {
    if (this.failAppends > 0) {
      this.failAppends--
      throw new Error('injected append failure')
    }
    return super.append(room, update)
  }
}
