import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import {
  connectClient,
  connectSynced,
  destroyClients,
  eventually,
  synced,
  uniqueRoom,
} from '../../../server/test/helpers/clients.js'
import { startTestServer, stopTestServers } from '../../../server/test/helpers/test-server.js'
import { TEST_SECRET } from '../../../server/test/helpers/tokens.js'
import { createRoomsApi, createToken, SymphonyApiError } from '../src/index.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

afterEach(async () => {
  destroyClients()
  await stopTestServers()
})

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
})
