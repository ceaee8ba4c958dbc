import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { afterEach, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import * as Y from 'yjs'
import { MemoryUpdateJournal } from '../src/adapters/memory-update-journal.js'
import type { JournalPosition } from '../src/ports/update-journal.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { ControlledSnapshotStore } from './helpers/controlled-store.js'
import { storedState } from './helpers/snapshots.js'
import { TcpLink } from './helpers/tcp-link.js'
import { startTestCluster, startTestServer, type TestServer } from './helpers/test-server.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'
const auth = { authorization: `Bearer ${API_SECRET}` }

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

/** `/api/v1/rooms/<room><rest>` on `t`, the room percent-encoded as in a WebSocket path. */
function api(t: TestServer, room: string, rest = '', init: RequestInit = {}) {
  return fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}${rest}`, {
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string>) },
  })
}

function post(t: TestServer, room: string, update: Uint8Array, headers: Record<string, string> = {}) {
  return api(t, room, '/update', {
    method: 'POST',
    body: new Blob([update as Uint8Array<ArrayBuffer>]),
    headers: { 'content-type': 'application/octet-stream', ...headers },
  })
}

/** A request with `target` exactly as given (no URL parser resolves `.` or `..` in it). */
function rawRequest(
  t: TestServer,
  method: string,
  target: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port: t.server.port, method, path: target, headers: auth },
      (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (body += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
      },
    )
    request.on('error', reject)
    request.end()
  })
}

/** An update that sets `key` in the map `m`, as a separate client would make it. */
function updateSetting(key: string, value: unknown): Uint8Array {
  const doc = new Y.Doc()
  doc.getMap('m').set(key, value)
  return Y.encodeStateAsUpdate(doc)
}

describe('REST API', () => {
  it('is off without API_SECRET, and refuses a missing or wrong secret with 401', async () => {
    const off = await startTestServer()
    const response = await api(off, 'r', '/document')
    assert.equal(response.status, 404)
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'NOT_FOUND')
    const on = await startTestServer({ apiSecret: API_SECRET })
    for (const authorization of ['', 'Bearer nope', `Bearer ${API_SECRET}x`, API_SECRET]) {
      const refused = await fetch(`${on.httpUrl}/api/v1/rooms/r/document`, { headers: { authorization } })
      assert.equal(refused.status, 401, authorization)
      assert.deepEqual(await refused.json(), {
        error: { code: 'UNAUTHORIZED', message: 'send Authorization: Bearer <API_SECRET>' },
      })
    }
    assert.equal((await api(on, 'x\ny', '/document')).status, 400, 'a bad room name')
    const notUtf8 = await fetch(`${on.httpUrl}/api/v1/rooms/%ED%A0%80/document`, { headers: auth })
    assert.equal(notUtf8.status, 400, 'escapes that are not UTF-8 name no room')
    assert.equal((await api(on, 'r', '/nothing')).status, 404)
    assert.equal((await api(on, 'r', '/document', { method: 'PUT' })).status, 405)
  })

  it('refuses an invalid room name with 400 ROOM_NAME_INVALID on every route, sent as it is', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    // Raw targets (fetch would resolve `..` and `.`), each method of each route.
    const routes = [
      ['GET', '/document'],
      ['GET', '/update'],
      ['POST', '/update'],
      ['GET', '/authors'],
      ['DELETE', ''],
    ]
    for (const segment of ['', '..', '.', '%2E%2E', '%2e', '%00', '%ED%A0%80', 'x'.repeat(129)]) {
      for (const [method, rest] of routes) {
        if (segment === '' && rest === '') continue // `/api/v1/rooms/` names the collection, no room
        const target = `/api/v1/rooms/${segment}${rest}`
        const { status, body } = await rawRequest(t, method as string, target)
        assert.deepEqual(
          [status, JSON.parse(body).error.code],
          [400, 'ROOM_NAME_INVALID'],
          `${method} ${target}`,
        )
      }
    }
    assert.equal(t.server.manager.loadedRoom(''), undefined)
  })

  it('reads a room as JSON and as a Yjs update (whole, or what a state vector lacks), loaded or not', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const room = uniqueRoom('team/read me')
    const client = await connectSynced(t.wsUrl, encodeURIComponent(room))
    client.doc.transact(() => {
      client.doc.getMap('settings').set('theme', 'dark')
      client.doc.getArray('todos').push(['milk', 'eggs'])
      client.doc.getText('title').insert(0, 'Shopping')
    })
    const expected = { settings: { theme: 'dark' }, todos: ['milk', 'eggs'], title: 'Shopping' }
    await eventually(
      async () => JSON.stringify(await (await api(t, room, '/document')).json()) === JSON.stringify(expected),
      'the JSON',
    )

    const whole = new Uint8Array(await (await api(t, room, '/update')).arrayBuffer())
    const copy = new Y.Doc()
    Y.applyUpdate(copy, whole)
    assert.deepEqual(copy.getArray('todos').toJSON(), ['milk', 'eggs'])
    const before = Y.encodeStateVector(copy)
    client.doc.getArray('todos').push(['bread'])
    await eventually(
      async () => (await (await api(t, room, '/document')).json()).todos.length === 3,
      'the edit',
    )
    const stateVector = Buffer.from(before).toString('base64')
    const diff = new Uint8Array(
      await (await api(t, room, `/update?stateVector=${encodeURIComponent(stateVector)}`)).arrayBuffer(),
    )
    assert.ok(diff.length < whole.length, 'only what the state vector lacks')
    Y.applyUpdate(copy, diff)
    assert.deepEqual(copy.getArray('todos').toJSON(), ['milk', 'eggs', 'bread'])
    for (const bad of ['%25%25', encodeURIComponent('/w==')]) {
      // Not base64, and base64 of bytes that are no state vector: the same refusal, named for it.
      const refused = await api(t, room, `/update?stateVector=${bad}`)
      assert.equal(refused.status, 400, bad)
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'STATE_VECTOR_INVALID')
    }

    client.destroy() // the room unloads after its grace period, saved; the API loads it again
    await eventually(() => t.server.manager.loadedRoom(room) === undefined, 'unloaded')
    assert.deepEqual(await (await api(t, room, '/document')).json(), {
      ...expected,
      todos: ['milk', 'eggs', 'bread'],
    })
  })

  it('applies a posted update as a client’s: connected clients get it live, and it is saved', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const room = uniqueRoom('write')
    const client = await connectSynced(t.wsUrl, room)
    const response = await post(t, room, updateSetting('from', 'backend'))
    assert.equal(response.status, 204)
    await eventually(() => client.doc.getMap('m').get('from') === 'backend', 'the client sees it live')
    client.destroy()
    await eventually(async () => {
      const saved = await storedState(t.snapshots, room)
      if (!saved) return false
      const doc = new Y.Doc()
      Y.applyUpdate(doc, saved)
      return doc.getMap('m').get('from') === 'backend'
    }, 'snapshotted when the room unloads')
  })

  it('refuses bad writes with clear errors and keeps the document', async () => {
    const t = await startTestServer({
      apiSecret: API_SECRET,
      limits: { maxMessageBytes: 4_096, maxDocumentBytes: 8_192 },
    })
    const room = uniqueRoom('refused')
    assert.equal((await post(t, room, updateSetting('ok', 1))).status, 204)
    const cases: [Uint8Array, Record<string, string>, number, string][] = [
      [updateSetting('x', 1), { 'content-type': 'text/plain' }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [new Uint8Array([1, 2, 3, 4, 5]), {}, 400, 'UPDATE_INVALID'],
      [updateSetting('big', 'x'.repeat(5_000)), {}, 413, 'UPDATE_TOO_LARGE'],
    ]
    for (const [body, headers, status, code] of cases) {
      const response = await post(t, room, body, headers)
      assert.equal(response.status, status, code)
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, code)
    }
    for (let i = 0; i < 2; i++) await post(t, room, updateSetting(`fill-${i}`, 'y'.repeat(3_000)))
    const tooMuch = await post(t, room, updateSetting('last', 'z'.repeat(3_000)))
    assert.equal(tooMuch.status, 413)
    assert.equal(((await tooMuch.json()) as { error: { code: string } }).error.code, 'DOCUMENT_TOO_LARGE')
    const doc = (await (await api(t, room, '/document')).json()) as { m: Record<string, unknown> }
    assert.equal(doc.m.ok, 1)
    assert.equal(doc.m.x, undefined)
  })

  it('answers 2xx only once the update is durable: 503 UPDATE_NOT_SAVED past API_SAVE_WAIT_MS while the journal and snapshots fail, 204 once a snapshot holds it', async () => {
    class FailingJournal extends MemoryUpdateJournal {
      override append(): Promise<JournalPosition> {
        return Promise.reject(new Error('injected journal failure'))
      }
    }
    const snapshots = new ControlledSnapshotStore((await startTestServer()).snapshots)
    snapshots.failSaves = Number.POSITIVE_INFINITY
    const server = await startTestServer({
      apiSecret: API_SECRET,
      apiSaveWaitMs: 300,
      adapters: { journal: new FailingJournal(), snapshots },
    })
    const room = uniqueRoom('rest-durable')
    const refused = await post(server, room, updateSetting('k', 'v'))
    assert.equal(refused.status, 503)
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'UPDATE_NOT_SAVED')
    assert.equal(await storedState(snapshots, room), null, 'nothing was saved, so nothing was acknowledged')
    snapshots.failSaves = 0
    // The journal still fails: only the snapshot saved at once makes the retried write durable.
    await eventually(
      async () => (await post(server, room, updateSetting('k', 'v'))).status === 204,
      'a 204 once a snapshot is saved',
    )
    const saved = new Y.Doc()
    Y.applyUpdate(saved, (await storedState(snapshots, room)) ?? new Uint8Array())
    assert.equal(saved.getMap('m').get('k'), 'v')
  })

  it('works on any server of a cluster: reads what another holds, writes reach its clients', async () => {
    const [a, b] = await startTestCluster({ apiSecret: API_SECRET })
    const room = uniqueRoom('cluster')
    const onA = await connectSynced(a.wsUrl, room)
    onA.doc.getText('t').insert(0, 'only in A')
    await eventually(() => a.server.manager.loadedRoom(room)?.doc.getText('t').length === 9, 'A has it')
    assert.deepEqual(await (await api(b, room, '/document')).json(), { t: 'only in A' }, 'B loads it from A')
    assert.equal((await post(b, room, updateSetting('via', 'b'))).status, 204)
    await eventually(() => onA.doc.getMap('m').get('via') === 'b', 'A’s client gets B’s write')
  })
})

describe('REST API: deleting a room', () => {
  it('closes its clients with RoomDeleted (our client reports ROOM_DELETED and stays away), removes what is stored, and a later connection starts empty', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const room = uniqueRoom('team/delete me')
    const raw = await connectSynced(t.wsUrl, encodeURIComponent(room))
    raw.doc.getMap('m').set('k', 'v')
    const ours = nodeClient(t.wsUrl).enter(room)
    await ours.whenSynced()
    const errors = recordErrors(ours)
    await t.server.manager.save(room)
    assert.ok(await storedState(t.snapshots, room), 'saved before the deletion')
    const closed = new Promise<number>((resolve) =>
      raw.provider.once('connection-close', (event) => resolve(event?.code ?? 0)),
    )

    assert.equal((await api(t, room, '', { method: 'DELETE' })).status, 204)
    assert.equal(await closed, CloseCode.RoomDeleted)
    await eventually(() => errors.some((e) => e.code === 'ROOM_DELETED'), 'our client is told')
    assert.equal(ours.status, 'failed')
    assert.equal(await storedState(t.snapshots, room), null, 'the snapshot is gone')
    assert.deepEqual((await t.server.manager.loadedRoom(room)) ?? null, null)
    const fresh = await connectSynced(t.wsUrl, encodeURIComponent(room))
    assert.equal(fresh.doc.getMap('m').size, 0, 'a new, empty room')
    assert.deepEqual(await (await api(t, room, '/document')).json(), {})
  })

  it('a client whose copy belongs to the deleted incarnation is refused with RoomDeleted when it comes back, and brings nothing back', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const link = await TcpLink.open(t.server.port)
    const room = uniqueRoom('incarnation')
    const ours = nodeClient(`ws://127.0.0.1:${link.port}`).enter(room)
    await ours.whenSynced()
    ours.doc.getMap('m').set('old', 'content')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getMap('m').size === 1, 'applied')
    const errors = recordErrors(ours)
    link.cut() // offline while the room is deleted
    assert.equal((await api(t, room, '', { method: 'DELETE' })).status, 204)
    const raw = await connectSynced(t.wsUrl, encodeURIComponent(room)) // the next incarnation
    link.restore()
    await eventually(() => errors.some((e) => e.code === 'ROOM_DELETED'), 'our client is told')
    assert.equal(raw.doc.getMap('m').size, 0, 'nothing of the deleted incarnation came back')
    assert.deepEqual(await (await api(t, room, '/document')).json(), {})
    link.close()
  })

  it('closes the clients of every server holding it, and none of them writes it back', async () => {
    const [a, b] = await startTestCluster({ apiSecret: API_SECRET })
    const room = uniqueRoom('cluster delete')
    const onA = await connectSynced(a.wsUrl, encodeURIComponent(room))
    const onB = await connectSynced(b.wsUrl, encodeURIComponent(room))
    onA.doc.getText('t').insert(0, 'doomed')
    await eventually(() => onB.doc.getText('t').toString() === 'doomed', 'both hold it')
    const closedOnA = new Promise<number>((resolve) =>
      onA.provider.once('connection-close', (e) => resolve(e?.code ?? 0)),
    )
    assert.equal((await api(b, room, '', { method: 'DELETE' })).status, 204)
    assert.equal(await closedOnA, CloseCode.RoomDeleted)
    await eventually(() => a.server.manager.loadedRoom(room) === undefined, 'A dropped it')
    assert.equal(await storedState(a.snapshots, room), null)
    assert.equal(await storedState(b.snapshots, room), null)
  })
})
