import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import { MemoryRegistryTable } from '../src/adapters/memory-room-registry.js'
import type { ConnectionInfo } from '../src/core/server-events.js'
import { ConnectionRefusedError } from '../src/errors.js'
import type { ChangeInfo, ServerHooks } from '../src/server-hooks.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, connectSynced, eventually, synced, uniqueRoom } from './helpers/clients.js'
import { refusedStatus } from './helpers/raw-socket.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

afterEach(async () => {
  await cleanUpAfterTest()
})

/** What `onChange` was called with, as plain data (the document read during the call). */
interface Call {
  room: string
  origin: ChangeInfo['origin']
  changes: number
  text: string
}

function recordChanges(calls: Call[]): Pick<ServerHooks, 'onChange'> {
  return {
    onChange: ({ room, origin, changes, document }) => {
      calls.push({ room, origin, changes, text: document.getText('t').toString() })
    },
  }
}

function postUpdate(t: TestServer, room: string, update: Uint8Array) {
  return fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/update`, {
    method: 'POST',
    body: new Blob([update as Uint8Array<ArrayBuffer>]),
    headers: { authorization: `Bearer ${API_SECRET}`, 'content-type': 'application/octet-stream' },
  })
}

describe('the onConnect and onDisconnect hooks', () => {
  it('onConnect sees who connects before the upgrade, and refuses with ConnectionRefusedError: 403 CONNECTION_REFUSED', async () => {
    const asked: ConnectionInfo[] = []
    const t = await startTestServer({
      auth: { mode: 'jwt', secret: TEST_SECRET },
      hooks: {
        onConnect: async (connection) => {
          asked.push(connection)
          await Promise.resolve() // may be async: the client waits
          if (connection.userId === 'mallory') throw new ConnectionRefusedError('mallory is banned here')
        },
      },
    })
    const room = uniqueRoom('hooks-connect')
    const refusals: string[] = []
    t.server.events.on('connection.refused', (event) => void refusals.push(event.code))
    const mallory = await signToken({ room, access: 'ro', sub: 'mallory', name: 'M', info: { team: 'x' } })
    const refused = await refusedStatus(`${t.wsUrl}/${room}?token=${mallory}`)
    assert.equal(refused.status, 403)
    assert.deepEqual(JSON.parse(refused.body), {
      error: { code: 'CONNECTION_REFUSED', message: 'mallory is banned here' },
    })
    assert.deepEqual(refusals, ['CONNECTION_REFUSED'])
    assert.deepEqual(
      { ...asked[0], connectionId: typeof asked[0]?.connectionId },
      {
        room,
        connectionId: 'string',
        userId: 'mallory',
        name: 'M',
        info: { team: 'x' },
        access: 'ro',
      },
    )

    const alice = await signToken({ room, access: 'rw', sub: 'alice' })
    const client = connectClient(t.wsUrl, room, { token: alice })
    await synced(client)
    const joined = await new Promise<string>((resolve) => {
      // The join was reported before the sync; the next one proves ids match what onConnect saw.
      const off = t.server.events.on('connection.joined', (event) => {
        off()
        resolve(event.connectionId)
      })
      connectClient(t.wsUrl, room, { token: alice })
    })
    assert.equal(asked.at(-1)?.connectionId, joined, 'the connection keeps the id onConnect saw')
  })

  it('refuses with 500 INTERNAL_ERROR, and logs, when onConnect throws anything else', async () => {
    const logger = recordingLogger()
    const t = await startTestServer({
      logger,
      hooks: {
        onConnect: () => {
          throw new Error('database down')
        },
      },
    })
    const refused = await refusedStatus(`${t.wsUrl}/${uniqueRoom('hooks-throw')}`)
    assert.equal(refused.status, 500)
    assert.equal(JSON.parse(refused.body).error.code, 'INTERNAL_ERROR')
    assert.ok(!refused.body.includes('database down'), 'the message stays in the log')
    const logged = logger.entries.find((entry) => entry.message === 'the onConnect hook failed')
    assert.equal((logged?.fields.err as Error | undefined)?.message, 'database down')
  })

  it('refuses as busy (503 SERVER_BUSY) when onConnect does not answer within hookTimeoutMs', async () => {
    let answer = () => {}
    const hung = new Promise<void>((resolve) => {
      answer = resolve
    })
    const t = await startTestServer({ hookTimeoutMs: 50, hooks: { onConnect: () => hung } })
    try {
      // Without the bound the upgrade would wait for the hook: this guard fails the test instead.
      const guard = new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000).unref())
      const refused = await Promise.race([
        refusedStatus(`${t.wsUrl}/${uniqueRoom('hooks-slow-connect')}`),
        guard,
      ])
      assert.equal(refused?.status, 503)
      assert.equal(JSON.parse(refused?.body ?? '{}').error?.code, 'SERVER_BUSY')
    } finally {
      answer()
    }
  })

  it('calls onDisconnect with the same connection once it has left; a throw is logged', async () => {
    const logger = recordingLogger()
    const left: ConnectionInfo[] = []
    const connected: ConnectionInfo[] = []
    const t = await startTestServer({
      logger,
      hooks: {
        onConnect: (connection) => void connected.push(connection),
        onDisconnect: (connection) => {
          left.push(connection)
          throw new Error('hook bug')
        },
      },
    })
    const room = uniqueRoom('hooks-disconnect')
    const client = await connectSynced(t.wsUrl, room)
    assert.equal(left.length, 0)
    client.destroy()
    await eventually(() => left.length === 1, 'onDisconnect is called')
    assert.deepEqual(left, connected)
    await eventually(
      () => logger.entries.some((entry) => entry.message === 'the onDisconnect hook failed'),
      'the throw is logged',
    )
  })
})

describe('the onChange hook', () => {
  it('is called once for changes that come within the debounce, with the document and the last origin', async () => {
    const calls: Call[] = []
    const t = await startTestServer({ hooks: { ...recordChanges(calls), onChangeDebounceMs: 500 } })
    const room = uniqueRoom('hooks-change')
    const client = await connectSynced(t.wsUrl, room)
    const text = client.doc.getText('t')
    for (const letter of 'abcde') text.insert(text.length, letter) // five updates, sent at once
    await eventually(() => calls.length > 0, 'onChange is called')
    assert.equal(calls.length, 1)
    const [call] = calls
    assert.equal(call?.room, room)
    assert.equal(call?.changes, 5)
    assert.equal(call?.text, 'abcde', 'the document holds every change it reports')
    assert.equal(call?.origin.kind, 'client')
  })

  it('is called within onChangeMaxWaitMs even while the debounce is long', async () => {
    const calls: Call[] = []
    const t = await startTestServer({
      hooks: { ...recordChanges(calls), onChangeDebounceMs: 60_000, onChangeMaxWaitMs: 50 },
    })
    const client = await connectSynced(t.wsUrl, uniqueRoom('hooks-max-wait'))
    client.doc.getText('t').insert(0, 'x')
    // Without the cap the call would come after 60 s, past this wait.
    await eventually(() => calls.length === 1, 'onChange is called before the debounce ends')
  })

  it('reports what is pending when the room unloads, before its document is freed', async () => {
    const calls: Call[] = []
    const t = await startTestServer({ hooks: { ...recordChanges(calls), onChangeDebounceMs: 60_000 } })
    const room = uniqueRoom('hooks-unload')
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('t').insert(0, 'last words')
    await eventually(() => t.server.manager.loadedRoom(room)?.doc.getText('t').length === 10, 'applied')
    assert.equal(calls.length, 0, 'still debounced')
    client.destroy()
    await eventually(() => calls.length === 1, 'onChange is called at unload')
    assert.equal(calls[0]?.text, 'last words')
  })

  it('reports a REST write as such; calls for one room never overlap; a throw is logged and the next change still reported', async () => {
    const logger = recordingLogger()
    const calls: Call[] = []
    let running = 0
    let overlapped = false
    const t = await startTestServer({
      logger,
      apiSecret: API_SECRET,
      hooks: {
        onChangeDebounceMs: 0,
        onChange: async ({ room, origin, changes, document }) => {
          overlapped ||= running > 0
          running++
          calls.push({ room, origin, changes, text: document.getMap('m').get('k') as string })
          await new Promise((resolve) => setImmediate(resolve))
          running--
          if (calls.length === 1) throw new Error('hook bug')
        },
      },
    })
    const room = uniqueRoom('hooks-rest')
    for (const value of ['one', 'two']) {
      const doc = new Y.Doc()
      doc.getMap('m').set('k', value)
      assert.equal((await postUpdate(t, room, Y.encodeStateAsUpdate(doc))).status, 204)
    }
    await eventually(() => calls.length === 2, 'both writes are reported')
    assert.deepEqual(
      calls.map((call) => call.origin),
      [{ kind: 'rest' }, { kind: 'rest' }],
    )
    assert.equal(overlapped, false)
    assert.ok(logger.entries.some((entry) => entry.message === 'the onChange hook failed'))
  })

  it('logs an onChange call past hookTimeoutMs, and the next call does not wait for it', async () => {
    const logger = recordingLogger()
    const calls: number[] = []
    const t = await startTestServer({
      logger,
      hookTimeoutMs: 50,
      hooks: {
        onChangeDebounceMs: 0,
        onChange: ({ changes }) => {
          calls.push(changes)
          return new Promise<void>(() => {}) // hangs
        },
      },
    })
    const client = await connectSynced(t.wsUrl, uniqueRoom('hooks-slow-change'))
    client.doc.getText('t').insert(0, 'a')
    await eventually(() => calls.length === 1, 'the first call')
    client.doc.getText('t').insert(0, 'b')
    await eventually(() => calls.length === 2, 'the second call, though the first never settled')
    assert.ok(logger.entries.some((entry) => entry.message === 'the onChange hook failed'))
  })

  it("runs on the server where a change was made, never for a peer's copy", async () => {
    const onA: Call[] = []
    const onB: Call[] = []
    // Two servers of one cluster, each with its own hooks, as each process has.
    const shared = {
      registryTable: new MemoryRegistryTable(),
      internal: { port: 0, advertisedHost: '127.0.0.1', token: 'internal-token-0123456789' },
    }
    const hooks = (calls: Call[]) => ({ ...recordChanges(calls), onChangeDebounceMs: 20 })
    const a = await startTestServer({ ...shared, serverId: 'a', hooks: hooks(onA) })
    const b = await startTestServer({ ...shared, serverId: 'b', hooks: hooks(onB) })
    const room = uniqueRoom('hooks-peer')
    const writer = await connectSynced(a.wsUrl, room)
    const reader = await connectSynced(b.wsUrl, room)
    writer.doc.getText('t').insert(0, 'made on a')
    await eventually(() => reader.doc.getText('t').toString() === 'made on a', 'b has the change')
    await eventually(() => onA.length === 1, 'a reports it')
    // b's hook would report a pending change at the latest when its room unloads.
    reader.destroy()
    await eventually(() => b.server.manager.roomState(room) === 'gone', 'b unloaded the room')
    assert.equal(onB.length, 0)
    assert.equal(onA[0]?.text, 'made on a')
  })
})
