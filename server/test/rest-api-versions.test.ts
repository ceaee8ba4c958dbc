import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import * as Y from 'yjs'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import type { RoomEvent, RoomEventSink } from '../src/ports/room-events.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, connectSynced, eventually, synced, uniqueRoom } from './helpers/clients.js'
import { startServerProcess } from './helpers/server-process.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'
import { savedVersionHolding, versionsApi as sharedVersionsApi, versionHolding } from './helpers/versions.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'
const auth = { authorization: `Bearer ${API_SECRET}` }

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

interface Version {
  id: string
  savedAt: string
  bytes: number
  deleted?: true
}

/** `/api/v1/rooms/<room>/versions<rest>` on `t`. */
async function versionsApi(t: TestServer, room: string, rest = '', method = 'GET') {
  const response = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/versions${rest}`, {
    method,
    headers: auth,
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

async function listed(t: TestServer, room: string, query = ''): Promise<Version[]> {
  const { status, body } = await versionsApi(t, room, query)
  assert.equal(status, 200, JSON.stringify(body))
  return body.versions as Version[]
}

/** Events the server emits, as its webhooks would send them. */
function recordingEvents(): RoomEventSink & { events: RoomEvent[] } {
  const events: RoomEvent[] = []
  return {
    events,
    emit: (event) => void events.push(event),
    stats: () => ({ queued: 0, dropped: 0 }),
    close: async () => {},
  }
}

const textOf = (doc: Y.Doc) => doc.getText('text').toString()

/** Saves the room once the server holds `text`: a version holding it. */
async function saveWhenHeld(t: TestServer, room: string, text: string): Promise<void> {
  await eventually(
    () => {
      const doc = t.server.manager.loadedRoom(room)?.doc
      return doc !== undefined && textOf(doc) === text
    },
    `the server holds ${JSON.stringify(text)}`,
  )
  await t.server.manager.save(room)
}

async function serverWithApi(overrides: Parameters<typeof startTestServer>[0] = {}) {
  const events = recordingEvents()
  const t = await startTestServer({
    apiSecret: API_SECRET,
    ...overrides,
    adapters: { events, ...overrides.adapters },
  })
  return { t, events }
}

describe('REST API: versions', () => {
  it('lists, reads and restores versions; both clients see the restore, which is a version of its own', async () => {
    const { t, events } = await serverWithApi()
    const room = uniqueRoom('versions')
    const a = await connectSynced(t.wsUrl, room)
    const b = await connectSynced(t.wsUrl, room)
    const ours = nodeClient(t.wsUrl).enter(room) // and a @symphony/client room
    await ours.whenSynced()
    assert.deepEqual(await listed(t, room), [], 'never saved: no versions')

    a.doc.getText('text').insert(0, 'hello world')
    a.doc.getMap('map').set('title', 'first')
    await eventually(() => textOf(b.doc) === 'hello world', 'b has the text')
    await t.server.manager.save(room)
    b.doc.getText('text').delete(5, 6)
    b.doc.getMap('map').set('title', 'second')
    b.doc.getArray('list').push(['added'])
    await eventually(() => a.doc.getArray('list').length === 1, 'a has the list')
    await t.server.manager.save(room)

    const [v2, v1] = await listed(t, room)
    assert.ok(v1 && v2)
    assert.ok(Date.parse(v1.savedAt) <= Date.parse(v2.savedAt), 'newest first')
    const first = await versionsApi(t, room, `/${v1.id}/document`)
    assert.deepEqual(first, { status: 200, body: { text: 'hello world', map: { title: 'first' } } })

    const restored = await versionsApi(t, room, `/${v1.id}/restore`, 'POST')
    assert.equal(restored.status, 200, JSON.stringify(restored.body))
    for (const client of [a, b, ours]) {
      await eventually(() => textOf(client.doc) === 'hello world', 'the restored text reaches every client')
      assert.equal(client.doc.getMap('map').get('title'), 'first')
      assert.equal(client.doc.getArray('list').length, 0)
    }
    const afterRestore = await listed(t, room)
    assert.equal(afterRestore.length, 3, 'the restore is a version of its own')
    assert.deepEqual(restored.body, { restored: v1.id, version: afterRestore[0]?.id })
    // A root type the version did not have stays, empty (a restore cannot remove a root type).
    assert.deepEqual((await versionsApi(t, room, `/${afterRestore[0]?.id}/document`)).body, {
      ...first.body,
      list: [],
    })
    assert.deepEqual(
      events.events.filter((e) => e.type === 'document.restored').map((e) => ({ ...e, at: 0 })),
      [{ type: 'document.restored', room, version: v1.id, at: 0 }],
    )

    // Undone by restoring the version before it.
    assert.equal((await versionsApi(t, room, `/${v2.id}/restore`, 'POST')).status, 200)
    for (const client of [a, b]) await eventually(() => textOf(client.doc) === 'hello', 'undone everywhere')
    assert.equal(a.doc.getMap('map').get('title'), 'second')
    assert.deepEqual(a.doc.getArray('list').toJSON(), ['added'])
  })

  it('restores one version asked for twice at once (a double click) to exactly that version', async () => {
    // The built server, as `npm start` runs it: its restores are made on a worker thread, so two
    // of them overlap (from source they run inline, one after the other).
    const data = mkdtempSync(join(tmpdir(), 'symphony-restore-twice-'))
    const server = await startServerProcess({
      AUTH: 'none',
      DATABASE_URL: 'none',
      API_SECRET,
      SNAPSHOTS: `file://${join(data, 'snapshots')}`,
      SNAPSHOT_INTERVAL_MS: '100',
    })
    const api = { httpUrl: `http://127.0.0.1:${server.port}`, apiSecret: API_SECRET }
    try {
      const room = uniqueRoom('versions')
      const a = await connectSynced(`ws://127.0.0.1:${server.port}`, room)
      a.doc.getText('text').insert(0, 'hello world')
      a.doc.getArray('list').push(['x', 'y'])
      const version = { text: 'hello world', list: ['x', 'y'] }
      const saved = await savedVersionHolding(api, room, version)
      a.doc.getText('text').delete(0, 6)
      a.doc.getArray('list').delete(0, 1)
      await eventually(
        async () => (await versionHolding(api, room, { text: 'world', list: ['y'] })) !== null,
        'the edit is saved',
      )
      // Each restore computed from the state before the other's would re-insert what was deleted.
      const answers = await Promise.all(
        [0, 1].map(() => sharedVersionsApi(api, room, `/${saved}/restore`, 'POST')),
      )
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [200, 200],
      )
      await eventually(() => textOf(a.doc) === 'hello world', 'the client has the version')
      assert.deepEqual(a.doc.getArray('list').toJSON(), ['x', 'y'])
      assert.notEqual(
        await versionHolding(api, room, version, 1),
        null,
        'the newest version holds exactly it',
      )
    } finally {
      server.child.kill('SIGKILL')
    }
  })

  it('merges an offline client’s edits onto the restored document', async () => {
    const { t } = await serverWithApi()
    const room = uniqueRoom('versions')
    const a = await connectSynced(t.wsUrl, room)
    a.doc.getText('text').insert(0, 'one two')
    await saveWhenHeld(t, room, 'one two')
    const [v1] = await listed(t, room)
    a.doc.getText('text').insert(7, ' three')
    const offline = await connectSynced(t.wsUrl, room)
    await eventually(() => textOf(offline.doc) === 'one two three', 'the other client has it all')
    // It goes offline with its copy, and edits it there.
    const offlineDoc = new Y.Doc()
    Y.applyUpdate(offlineDoc, Y.encodeStateAsUpdate(offline.doc))
    offline.destroy()
    offlineDoc.getText('text').insert(0, 'zero ')
    assert.equal((await versionsApi(t, room, `/${v1?.id}/restore`, 'POST')).status, 200)
    await eventually(() => textOf(a.doc) === 'one two', 'restored')
    const back = connectClient(t.wsUrl, room, {}, offlineDoc)
    await synced(back)
    await eventually(
      () => textOf(a.doc) === 'zero one two' && textOf(back.doc) === 'zero one two',
      'the offline edit lands on the restored text, everywhere',
    )
  })

  it('pages with limit and cursor, and refuses bad ids, limits, cursors and methods with their codes', async () => {
    const { t } = await serverWithApi({ adapters: { snapshots: new MemorySnapshotStore() } })
    const room = uniqueRoom('versions')
    const a = await connectSynced(t.wsUrl, room)
    for (let i = 0; i < 4; i++) {
      a.doc.getArray('list').push([i])
      await eventually(
        () => t.server.manager.loadedRoom(room)?.doc.getArray('list').length === i + 1,
        'applied',
      )
      await t.server.manager.save(room)
    }
    const whole = await listed(t, room, '?limit=1000')
    assert.equal(whole.length, 4)
    assert.equal((await listed(t, room)).length, 4, 'default limit: 50')
    const ids: string[] = []
    let cursor: string | null = null
    do {
      const { body }: { body: Record<string, unknown> } = await versionsApi(
        t,
        room,
        `?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      )
      ids.push(...(body.versions as Version[]).map((v) => v.id))
      cursor = body.nextCursor as string | null
    } while (cursor)
    assert.deepEqual(
      ids,
      whole.map((v) => v.id),
      'the pages, in order, are the whole list',
    )

    const codeOf = async (rest: string, method = 'GET') => {
      const { status, body } = await versionsApi(t, room, rest, method)
      return `${status} ${(body.error as { code: string }).code}`
    }
    assert.equal(await codeOf('?limit=0'), '400 LIMIT_INVALID')
    assert.equal(await codeOf('?limit=1001'), '400 LIMIT_INVALID', 'one past the largest page')
    assert.equal(await codeOf('?limit=2&limit=3'), '400 LIMIT_INVALID')
    assert.equal(await codeOf('?cursor=%21%21'), '400 CURSOR_INVALID')
    assert.equal(await codeOf('?cursor=abc'), '400 CURSOR_INVALID', 'well-formed, not one the store gives')
    assert.equal(await codeOf('/424242/document'), '404 VERSION_NOT_FOUND')
    assert.equal(await codeOf('/424242/restore', 'POST'), '404 VERSION_NOT_FOUND')
    assert.equal(await codeOf('/a%20b/document'), '400 VERSION_ID_INVALID')
    assert.equal(await codeOf('/1/restore'), '405 METHOD_NOT_ALLOWED')
    assert.equal(await codeOf('', 'DELETE'), '405 METHOD_NOT_ALLOWED')
    assert.equal(await codeOf('/1/nothing'), '404 NOT_FOUND')
    const badRoom = await fetch(`${t.httpUrl}/api/v1/rooms/x%0Ay/versions`, { headers: auth })
    assert.equal(badRoom.status, 400)
  })

  it('refuses to restore a deletion, or a version of an incarnation deleted since (409), and still lists them', async () => {
    const { t } = await serverWithApi()
    const room = uniqueRoom('versions')
    const a = await connectSynced(t.wsUrl, room)
    a.doc.getText('text').insert(0, 'before the deletion')
    await saveWhenHeld(t, room, 'before the deletion')
    a.destroy()
    assert.equal(
      (await fetch(`${t.httpUrl}/api/v1/rooms/${room}`, { method: 'DELETE', headers: auth })).status,
      204,
    )
    const [tombstone, old] = await listed(t, room)
    assert.equal(tombstone?.deleted, true)
    assert.equal(old?.deleted, undefined)
    assert.deepEqual((await versionsApi(t, room, `/${old?.id}/document`)).body, {
      text: 'before the deletion',
    })
    for (const version of [tombstone, old]) {
      const { status, body } = await versionsApi(t, room, `/${version?.id}/restore`, 'POST')
      assert.equal(status, 409)
      assert.equal((body.error as { code: string }).code, 'VERSION_NOT_RESTORABLE')
    }
  })

  it('is refused as a client’s update of its size would be, past MAX_DOCUMENT_BYTES (413), leaving the room as it was', async () => {
    const { t, events } = await serverWithApi({ limits: { maxDocumentBytes: 8192 } })
    const room = uniqueRoom('versions')
    const a = await connectSynced(t.wsUrl, room)
    const text = a.doc.getText('text')
    text.insert(0, 'a'.repeat(5000))
    await saveWhenHeld(t, room, 'a'.repeat(5000))
    const [old] = await listed(t, room)
    text.delete(0, 5000)
    text.insert(0, 'b'.repeat(5000))
    await saveWhenHeld(t, room, 'b'.repeat(5000))
    // Bringing the old text back means inserting it again: 5000 bytes more than the room holds now.
    const { status, body } = await versionsApi(t, room, `/${old?.id}/restore`, 'POST')
    assert.equal(status, 413)
    assert.equal((body.error as { code: string }).code, 'DOCUMENT_TOO_LARGE')
    assert.equal(textOf(a.doc), 'b'.repeat(5000))
    assert.equal(events.events.filter((e) => e.type === 'document.restored').length, 0)
  })
})
