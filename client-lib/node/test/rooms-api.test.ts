import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { cleanUpAfterTest } from '@symphony/test-helpers/cleanup'
import { connectClient, connectSynced, eventually, synced, uniqueRoom } from '@symphony/test-helpers/clients'
import { isolatedDatabaseUrl, testMetadataSink } from '@symphony/test-helpers/test-database'
import { startTestServer } from '@symphony/test-helpers/test-server'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import * as Y from 'yjs'
import { createRoomsApi, createToken, SymphonyApiError } from '../src/index.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

afterEach(cleanUpAfterTest)

describe('createRoomsApi against a real server', () => {
  it('reads, writes and deletes a room, typed, with any room name', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const room = uniqueRoom('team/api ü')
    const client = await connectSynced(t.wsUrl, encodeURIComponent(room))
    client.doc.getArray('todos').push(['milk'])
    await eventually(async () => JSON.stringify(await api.getDocument(room)) === '{"todos":["milk"]}', 'read')

    const copy = new Y.Doc()
    Y.applyUpdate(copy, await api.getUpdate(room))
    const known = Y.encodeStateVector(copy)
    client.doc.getArray('todos').push(['eggs'])
    await eventually(async () => ((await api.getDocument(room)).todos as string[]).length === 2, 'the edit')
    Y.applyUpdate(copy, await api.getUpdate(room, known))
    assert.deepEqual(copy.getArray('todos').toJSON(), ['milk', 'eggs'])

    const backend = new Y.Doc()
    backend.getMap('meta').set('owner', 'backend')
    await api.postUpdate(room, Y.encodeStateAsUpdate(backend))
    await eventually(() => client.doc.getMap('meta').get('owner') === 'backend', 'the client sees the write')
    assert.deepEqual(await api.authors(room), [], 'with AUTH=none no client id is bound')

    await api.deleteRoom(room)
    assert.deepEqual(await api.getDocument(room), {})
  })

  it('reads which user wrote under each client id', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET, auth: { mode: 'jwt', secret: TEST_SECRET } })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const room = uniqueRoom('authors')
    const token = await createToken({
      room,
      access: 'rw',
      userId: 'u-7',
      name: 'Ada',
      expiresIn: 60,
      secret: TEST_SECRET,
    })
    const client = connectClient(t.wsUrl, room, { token })
    await synced(client)
    client.doc.getText('t').insert(0, 'by Ada')
    await eventually(async () => (await api.authors(room)).length === 1, 'bound')
    assert.deepEqual(await api.authors(room), [
      { clientId: client.doc.clientID, subject: 'u-7', name: 'Ada' },
    ])
  })

  it('lists rooms page by page, with their connections and last change, from the metadata database', async () => {
    const url = await isolatedDatabaseUrl()
    const serverId = uniqueRoom('server')
    const metadata = testMetadataSink(serverId, url)
    const t = await startTestServer({
      serverId,
      apiSecret: API_SECRET,
      adapters: { metadata },
      metadataSampleIntervalMs: 50,
    })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const prefix = `${uniqueRoom('team')}/`
    const names = ['a', 'b b', 'c/ü'].map((n) => prefix + n)
    const clients = await Promise.all(names.map((name) => connectSynced(t.wsUrl, encodeURIComponent(name))))
    clients[0]?.doc.getText('t').insert(0, 'changed')
    await eventually(async () => {
      const { rooms } = await api.list({ prefix })
      return rooms.length === 3 && rooms[0]?.updatedAt !== null
    }, 'three rooms, the first changed')

    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: Awaited<ReturnType<typeof api.list>> = await api.list({ prefix, limit: 2, cursor })
      assert.ok(page.rooms.length <= 2)
      seen.push(...page.rooms.map((room) => room.name))
      cursor = page.nextCursor
    } while (cursor)
    assert.deepEqual(seen, names)
    const { rooms } = await api.list({ prefix })
    assert.deepEqual(
      rooms.map(({ name, connections }) => ({ name, connections })),
      names.map((name) => ({ name, connections: 1 })),
    )
    assert.ok(rooms[0]?.bytes && rooms[0].bytes > 0)
    assert.equal(rooms[1]?.updatedAt, null)
    await assert.rejects(api.list({ prefix, limit: 1001 }), { status: 400, code: 'LIMIT_INVALID' })
    await assert.rejects(api.list({ cursor: 'nope!' }), { status: 400, code: 'CURSOR_INVALID' })

    const off = await startTestServer({ apiSecret: API_SECRET })
    await assert.rejects(createRoomsApi({ url: off.httpUrl, secret: API_SECRET }).list(), {
      status: 501,
      code: 'METADATA_OFF',
    })
  })

  it('rejects with SymphonyApiError carrying the status and the server’s code', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const wrong = createRoomsApi({ url: t.httpUrl, secret: 'x'.repeat(32) })
    await assert.rejects(wrong.getDocument('r'), (error: unknown) => {
      assert.ok(error instanceof SymphonyApiError)
      assert.equal(error.status, 401)
      assert.equal(error.code, 'UNAUTHORIZED')
      return true
    })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    await assert.rejects(api.postUpdate('r', new Uint8Array([9, 9, 9])), {
      status: 400,
      code: 'UPDATE_INVALID',
    })
    assert.throws(() => createRoomsApi({ url: t.httpUrl, secret: 'short' }), TypeError)
  })

  it('refuses an invalid room name with ROOM_NAME_INVALID from every route, and loads no room', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const update = Y.encodeStateAsUpdate(new Y.Doc())
    const calls: Record<string, (room: string) => Promise<unknown>> = {
      getDocument: (room) => api.getDocument(room),
      getUpdate: (room) => api.getUpdate(room),
      postUpdate: (room) => api.postUpdate(room, update),
      authors: (room) => api.authors(room),
      deleteRoom: (room) => api.deleteRoom(room),
      versions: (room) => api.versions(room),
      restore: (room) => api.restore(room, '1'),
    }
    // `.` and `..` would be resolved as path steps by any URL parser: `rooms/../document`.
    for (const room of ['..', '.', '', 'a\nb', 'x'.repeat(129)]) {
      for (const [method, call] of Object.entries(calls)) {
        await assert.rejects(call(room), (error: unknown) => {
          assert.ok(error instanceof SymphonyApiError, `${method}(${JSON.stringify(room)})`)
          assert.equal(error.status, 400, `${method}(${JSON.stringify(room)})`)
          assert.equal(error.code, 'ROOM_NAME_INVALID', `${method}(${JSON.stringify(room)})`)
          return true
        })
      }
    }
    assert.equal(t.server.manager.loadedRoom('document'), undefined, 'no room named after a route part')
  })

  it('lists a room’s versions page by page and restores one, which every client sees', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const room = uniqueRoom('team/versions ü')
    const client = await connectSynced(t.wsUrl, encodeURIComponent(room))
    const text = client.doc.getText('text')
    const saved: string[] = []
    for (const word of ['one', ' two', ' three']) {
      text.insert(text.length, word)
      const expected = text.toString()
      await eventually(async () => (await api.getDocument(room)).text === expected, 'the server has it')
      await t.server.manager.save(room)
      saved.push(expected)
    }
    assert.deepEqual(await api.versions(room, { limit: 1000 }).then((l) => l.versions.length), 3)
    const first = await api.versions(room, { limit: 2 })
    assert.equal(first.versions.length, 2)
    assert.ok(first.nextCursor)
    const rest = await api.versions(room, { limit: 2, cursor: first.nextCursor })
    assert.equal(rest.nextCursor, null)
    const [newest, , oldest] = [...first.versions, ...rest.versions]
    assert.ok(newest && oldest)
    assert.equal(typeof newest.savedAt, 'string')
    assert.ok(newest.bytes > oldest.bytes)

    const result = await api.restore(room, oldest.id)
    assert.equal(result.restored, oldest.id)
    await eventually(() => text.toString() === 'one', 'the client sees the restore')
    const after = await api.versions(room)
    assert.equal(after.versions[0]?.id, result.version, 'the restore is the newest version')
    // A restore is undone by restoring the version before it.
    await api.restore(room, newest.id)
    await eventually(() => text.toString() === saved[2], 'undone')

    await assert.rejects(api.restore(room, 'nope'), { status: 404, code: 'VERSION_NOT_FOUND' })
    for (const id of ['..', '.', 'a/b', '']) {
      await assert.rejects(api.restore(room, id), { status: 400, code: 'VERSION_ID_INVALID' }, id)
    }
    await assert.rejects(api.versions(room, { limit: 0 }), { status: 400, code: 'LIMIT_INVALID' })
  })
})
