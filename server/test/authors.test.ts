import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { CloseCode, MESSAGE_SYNC_STATUS } from '@symphony/client/wire'
import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { MemorySnapshotStore } from '../src/adapters/memory-snapshot-store.js'
import type { AuthConfig } from '../src/auth/authenticator.js'
import { encodeSyncStatus, encodeUpdate } from '../src/protocol/codec.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, eventually, synced, type TestClient, uniqueRoom } from './helpers/clients.js'
import { closed, collect, openRaw } from './helpers/raw-socket.js'
import { startTestCluster, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

afterEach(cleanUpAfterTest)

const AUTH: AuthConfig = { mode: 'jwt', secret: TEST_SECRET }
const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

const tokenFor = (room: string, sub: string, name?: string) =>
  signToken({ room, sub, access: 'rw', ...(name ? { name } : {}) })

/** A real y-websocket provider for `sub`, whose sync-status requests (type 102) `saved` awaits. */
interface User extends TestClient {
  text: Y.Text
  /** Asks the server whether everything sent so far is saved; resolves on its answer. */
  saved(): Promise<void>
}

async function user(t: TestServer, room: string, sub: string, name?: string, doc?: Y.Doc): Promise<User> {
  const client = connectClient(
    t.wsUrl,
    room,
    { token: await tokenFor(room, sub, name), syncStatus: '1' },
    doc,
  )
  const answers = new Set<number>()
  client.provider.messageHandlers[MESSAGE_SYNC_STATUS] = (_encoder, decoder) => {
    const payload = decoding.readVarUint8Array(decoder)
    if (payload.length > 0) answers.add(payload[0] as number)
  }
  await synced(client)
  let asked = 0
  return Object.assign(client, {
    text: client.doc.getText('t'),
    async saved() {
      const request = ++asked
      client.provider.ws?.send(encodeSyncStatus(new Uint8Array([request])))
      await eventually(() => answers.has(request), `sync-status answer ${request}`)
    },
  })
}

/** A raw connection for `sub`: sends what no real client would, and records what it hears. */
async function rawWriter(t: TestServer, room: string, sub: string) {
  const token = await tokenFor(room, sub)
  const socket = await openRaw(`${t.wsUrl}/${room}?token=${encodeURIComponent(token)}&syncStatus=1`)
  return { socket, frames: collect(socket), gone: closed(socket) }
}

/** Sync-status answers among `frames` (the empty announcement left out). */
const answersIn = (frames: Buffer[]) => frames.filter((f) => f[0] === MESSAGE_SYNC_STATUS && f.length > 2)

/** An update under `victim`'s client id, at its next clock, appending `text` to its copy. */
function forge(victim: Y.Doc, text: string): Uint8Array {
  const forger = new Y.Doc()
  Y.applyUpdate(forger, Y.encodeStateAsUpdate(victim))
  forger.clientID = victim.clientID
  const before = Y.encodeStateVector(forger)
  forger.getText('t').insert(forger.getText('t').length, text)
  return Y.encodeStateAsUpdate(forger, before)
}

const textOn = (t: TestServer, room: string) => t.server.manager.loadedRoom(room)?.doc.getText('t').toString()

/** The room's text as `t`'s REST API answers it (from the room's owner, wherever that is). */
async function textVia(t: TestServer, room: string): Promise<unknown> {
  const response = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/document`, {
    headers: { authorization: `Bearer ${API_SECRET}` },
  })
  return ((await response.json()) as { t?: unknown }).t
}

async function authorsOn(t: TestServer, room: string): Promise<unknown> {
  const response = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/authors`, {
    headers: { authorization: `Bearer ${API_SECRET}` },
  })
  assert.equal(response.status, 200)
  return ((await response.json()) as { authors: unknown }).authors
}

describe('edits bound to their author', () => {
  it('refuses (1002) a write under another user’s client id; that user’s own edit is applied, acknowledged and kept everywhere', async () => {
    const snapshots = new MemorySnapshotStore()
    const options = { auth: AUTH, apiSecret: API_SECRET, adapters: { snapshots } }
    const [a, b] = await startTestCluster(options)
    const room = uniqueRoom()
    const victim = await user(a, room, 'victim', 'Victim')
    victim.text.insert(0, 'Dear bank: ')
    await victim.saved()
    const reader = await user(b, room, 'reader')
    await eventually(() => reader.text.toString() === 'Dear bank: ', 'the other server has it')
    // Client ids and clocks are public: Mallory writes first where the victim writes next.
    const mallory = await rawWriter(b, room, 'mallory')
    mallory.socket.send(encodeUpdate(forge(victim.doc, 'Pay Eve')))
    mallory.socket.send(encodeSyncStatus(new Uint8Array([1])))
    assert.equal((await mallory.gone).code, CloseCode.ProtocolError)
    assert.deepEqual(answersIn(mallory.frames), [], 'nothing of Mallory’s was acknowledged')
    victim.text.insert(11, 'Pay Bob')
    await victim.saved()
    for (const t of [a, b]) {
      await eventually(
        async () => (await textVia(t, room)) === 'Dear bank: Pay Bob',
        'each server answers the victim’s text',
      )
    }
    await eventually(() => reader.text.toString() === 'Dear bank: Pay Bob', 'and so does every client')
    assert.equal(victim.text.toString(), 'Dear bank: Pay Bob')
    const expected = [{ clientId: victim.doc.clientID, subject: 'victim', name: 'Victim' }]
    assert.deepEqual(await authorsOn(b, room), expected)
    victim.destroy()
    reader.destroy()
    await a.stop()
    await b.stop()
    const restarted = await startTestServer(options)
    const later = await user(restarted, room, 'reader')
    assert.equal(later.text.toString(), 'Dear bank: Pay Bob', 'the room as saved holds the victim’s text')
    assert.deepEqual(await authorsOn(restarted, room), expected, 'and its authors')
  })

  it('keeps an id another connection’s presence speaks for from being taken first (1013), on any server', async () => {
    const [a, b] = await startTestCluster({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const victim = await user(a, room, 'victim')
    const watcher = await user(b, room, 'watcher')
    victim.provider.awareness.setLocalStateField('user', { name: 'Victim' }) // its id is public now
    await eventually(() => watcher.provider.awareness.getStates().has(victim.doc.clientID), 'B knows the id')
    const mallory = await rawWriter(b, room, 'mallory')
    mallory.socket.send(encodeUpdate(forge(victim.doc, 'Pay Eve')))
    mallory.socket.send(encodeSyncStatus(new Uint8Array([1])))
    assert.equal((await mallory.gone).code, CloseCode.TryAgainLater)
    assert.deepEqual(answersIn(mallory.frames), [])
    victim.text.insert(0, 'Pay Bob')
    await victim.saved()
    for (const t of [a, b])
      await eventually(async () => (await textVia(t, room)) === 'Pay Bob', 'the victim’s first edit')
    assert.deepEqual(await authorsOn(a, room), [
      { clientId: victim.doc.clientID, subject: 'victim', name: null },
    ])
  })

  it('lets the same user write on under its client id from a new connection, and no one else', async () => {
    const t = await startTestServer({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const doc = new Y.Doc()
    const first = await user(t, room, 'alice', 'Alice', doc)
    first.text.insert(0, 'one ')
    await first.saved()
    first.provider.destroy() // the page reconnects, with a fresh token, keeping its document
    const again = await user(t, room, 'alice', 'Alice L.', doc)
    again.text.insert(4, 'two')
    await again.saved()
    assert.equal(textOn(t, room), 'one two')
    assert.deepEqual(await authorsOn(t, room), [{ clientId: doc.clientID, subject: 'alice', name: 'Alice' }])
    again.provider.destroy()
    const refused = new Promise<number>((resolve) => {
      void user(t, room, 'bob', 'Bob', doc).then((bob) =>
        bob.provider.once('connection-close', (event) => resolve(event?.code ?? 0)),
      )
    })
    doc.getText('t').insert(7, ' three') // Bob on Alice’s tab
    assert.equal(await refused, CloseCode.ProtocolError)
    assert.equal(textOn(t, room), 'one two')
  })

  it('binds REST writes to symphony:api, and refuses one under a user’s client id (400)', async () => {
    const [a, b] = await startTestCluster({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const alice = await user(a, room, 'alice', 'Alice')
    alice.text.insert(0, 'hi')
    await alice.saved()
    const backend = new Y.Doc()
    backend.getMap('m').set('from', 'backend')
    const post = (server: TestServer, update: Uint8Array) =>
      fetch(`${server.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/update`, {
        method: 'POST',
        body: new Blob([update as Uint8Array<ArrayBuffer>]),
        headers: { authorization: `Bearer ${API_SECRET}`, 'content-type': 'application/octet-stream' },
      })
    assert.equal((await post(b, Y.encodeStateAsUpdate(backend))).status, 204)
    const forged = await post(b, forge(alice.doc, ' (sent by the API)'))
    assert.equal(forged.status, 400)
    assert.equal(((await forged.json()) as { error: { code: string } }).error.code, 'UPDATE_INVALID')
    await eventually(() => alice.doc.getMap('m').get('from') === 'backend', 'the REST write reached Alice')
    assert.equal(textOn(a, room), 'hi')
    assert.deepEqual(
      await authorsOn(b, room),
      [
        { clientId: alice.doc.clientID, subject: 'alice', name: 'Alice' },
        { clientId: backend.clientID, subject: 'symphony:api', name: null },
      ].sort((x, y) => x.clientId - y.clientId),
    )
  })
})

describe('content under ids a room holds', () => {
  for (const auth of [AUTH, { mode: 'none' } as const]) {
    it(`refuses (1002) and never acknowledges an update that repeats held ids with other content (AUTH=${auth.mode})`, async () => {
      const t = await startTestServer({ auth })
      const room = uniqueRoom()
      const original = new Y.Doc()
      const before = Y.encodeStateVector(original)
      original.getText('t').insert(0, 'Pay Bob')
      const honest = Y.encodeStateAsUpdate(original, before)
      const writer = await rawWriter(t, room, 'alice')
      writer.socket.send(encodeUpdate(honest))
      writer.socket.send(encodeSyncStatus(new Uint8Array([1])))
      await eventually(() => answersIn(writer.frames).length === 1, 'the first is acknowledged')
      const other = new Y.Doc()
      other.clientID = original.clientID
      other.getText('t').insert(0, 'Pay Eve')
      const again = await rawWriter(t, room, 'alice') // the same user, another connection
      again.socket.send(encodeUpdate(Y.encodeStateAsUpdate(other)))
      again.socket.send(encodeSyncStatus(new Uint8Array([1])))
      assert.equal((await again.gone).code, CloseCode.ProtocolError)
      assert.deepEqual(answersIn(again.frames), [])
      assert.equal(textOn(t, room), 'Pay Bob')
      // Resending what the room holds is what reconnecting clients do: accepted, and answered.
      writer.socket.send(encodeUpdate(Y.encodeStateAsUpdate(original)))
      writer.socket.send(encodeSyncStatus(new Uint8Array([2])))
      await eventually(() => answersIn(writer.frames).length === 2, 'the resend is acknowledged')
    })
  }
})

describe('the authors map is the server’s', () => {
  it('refuses client writes to it, and accepts a client resending the bindings it received', async () => {
    const t = await startTestServer({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const alice = await user(t, room, 'alice', 'Alice')
    const received: Uint8Array[] = []
    alice.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === alice.provider) received.push(update)
    })
    alice.text.insert(0, 'hello')
    await alice.saved()
    await eventually(() => alice.doc.getMap('symphony:authors').size > 0, 'Alice received her binding')
    const attempt = async (update: Uint8Array) => {
      const mallory = await rawWriter(t, room, 'mallory')
      mallory.socket.send(encodeUpdate(update))
      return (await mallory.gone).code
    }
    const fresh = new Y.Doc()
    fresh.getMap('symphony:authors').set(String(alice.doc.clientID), 'mallory')
    assert.equal(await attempt(Y.encodeStateAsUpdate(fresh)), CloseCode.ProtocolError, 'a new entry')
    const copy = new Y.Doc()
    Y.applyUpdate(copy, Y.encodeStateAsUpdate(alice.doc))
    const before = Y.encodeStateVector(copy)
    copy.getMap('symphony:authors').set(String(alice.doc.clientID), 'mallory')
    assert.equal(await attempt(Y.encodeStateAsUpdate(copy, before)), CloseCode.ProtocolError, 'an overwrite')
    const deleted = new Y.Doc()
    Y.applyUpdate(deleted, Y.encodeStateAsUpdate(alice.doc))
    deleted.getMap('symphony:authors').delete(String(alice.doc.clientID))
    const deletion = Y.diffUpdate(Y.encodeStateAsUpdate(deleted), Y.encodeStateVector(alice.doc))
    assert.equal(await attempt(deletion), CloseCode.ProtocolError, 'a deletion')
    // y-indexeddb replays what a page received when it loads: the bindings among it.
    const replay = await rawWriter(t, room, 'alice')
    for (const update of received) replay.socket.send(encodeUpdate(update))
    replay.socket.send(encodeUpdate(Y.encodeStateAsUpdate(alice.doc)))
    replay.socket.send(encodeSyncStatus(new Uint8Array([1])))
    const outcome = await Promise.race([
      replay.gone.then((close) => `closed ${close.code}: ${close.reason}`),
      eventually(() => answersIn(replay.frames).length === 1, 'accepted and answered').then(() => 'answered'),
    ])
    assert.equal(outcome, 'answered')
    assert.deepEqual(await authorsOn(t, room), [
      { clientId: alice.doc.clientID, subject: 'alice', name: 'Alice' },
    ])
  })
})

describe('big updates (applied in slices) are bound and compared the same way', () => {
  it('binds a big first write, and refuses a big one that repeats it with other content', async () => {
    const t = await startTestServer({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const doc = new Y.Doc()
    doc.getText('t').insert(0, 'a'.repeat(300 * 1024))
    const writer = await rawWriter(t, room, 'alice')
    writer.socket.send(encodeUpdate(Y.encodeStateAsUpdate(doc)))
    writer.socket.send(encodeSyncStatus(new Uint8Array([1])))
    await eventually(() => answersIn(writer.frames).length === 1, 'applied and saved')
    assert.deepEqual(await authorsOn(t, room), [{ clientId: doc.clientID, subject: 'alice', name: null }])
    const other = new Y.Doc()
    other.clientID = doc.clientID
    other.getText('t').insert(0, 'b'.repeat(300 * 1024))
    const again = await rawWriter(t, room, 'alice')
    again.socket.send(encodeUpdate(Y.encodeStateAsUpdate(other)))
    assert.equal((await again.gone).code, CloseCode.ProtocolError)
    const mallory = await rawWriter(t, room, 'mallory')
    mallory.socket.send(encodeUpdate(forge(doc, 'c'.repeat(300 * 1024))))
    assert.equal((await mallory.gone).code, CloseCode.ProtocolError)
    assert.equal(textOn(t, room), 'a'.repeat(300 * 1024))
  })

  it('compares every slice of a big update: a resend passes, one value changed in its last slice does not', async () => {
    const t = await startTestServer({ auth: AUTH, apiSecret: API_SECRET })
    const room = uniqueRoom()
    const entries = (changed: string) => {
      const doc = new Y.Doc()
      doc.clientID = 77
      doc.transact(() => {
        for (let i = 0; i < 3_000; i++) doc.getMap('m').set(`k${i}`, i === 2_999 ? changed : 'v'.repeat(100))
      })
      return Y.encodeStateAsUpdate(doc) // 3,000 structs: a dozen slices
    }
    const original = entries('v'.repeat(100))
    assert.ok(original.length > 256 * 1024)
    const writer = await rawWriter(t, room, 'alice')
    writer.socket.send(encodeUpdate(original))
    writer.socket.send(encodeUpdate(original)) // the same again: nothing to refuse
    writer.socket.send(encodeSyncStatus(new Uint8Array([1])))
    await eventually(() => answersIn(writer.frames).length === 1, 'applied, resent and saved')
    const again = await rawWriter(t, room, 'alice')
    again.socket.send(encodeUpdate(entries('w'.repeat(100))))
    assert.equal((await again.gone).code, CloseCode.ProtocolError)
    const map = t.server.manager.loadedRoom(room)?.doc.getMap('m')
    assert.equal(map?.get('k2999'), 'v'.repeat(100))
  })
})
