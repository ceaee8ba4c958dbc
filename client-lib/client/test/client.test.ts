import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { AuthDeniedError, createClient, type SymphonyClientError } from '@symphony/client'
import { eventually, uniqueRoom } from '@symphony/test-helpers/clients'
import { serveJwks } from '@symphony/test-helpers/jwks'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { TcpLink } from '@symphony/test-helpers/tcp-link'
import { startTestServer, stopTestServers, type TestServer } from '@symphony/test-helpers/test-server'
import { signToken, TEST_SECRET } from '@symphony/test-helpers/tokens'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import WebSocket from 'ws'
import * as Y from 'yjs'

afterEach(async () => {
  await destroyNodeClients()
  await stopTestServers()
})

const client = nodeClient

const refusals = async (t: TestServer, reason: string) =>
  (await t.server.metrics.connectionsRefused.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0

describe('@symphony/client against a real server', () => {
  it('syncs maps, lists and text between two clients, and entering twice gives the same room', async () => {
    const t = await startTestServer()
    const room = uniqueRoom('client')
    const ada = client(t.wsUrl)
    const a = ada.enter(room)
    const b = client(t.httpUrl).enter(room) // an http(s) URL works too
    assert.equal(ada.enter(room), a)
    await Promise.all([a.whenSynced(), b.whenSynced()])
    a.transact(() => {
      a.map<number>('scores').set('ada', 3)
      a.list<string>('todos').push(['milk'])
    })
    b.text('notes').insert(0, 'hello')
    await eventually(
      () => b.map('scores').get('ada') === 3 && b.list('todos').length === 1,
      'b has a’s edits',
    )
    await eventually(() => a.text('notes').toString() === 'hello', 'a has b’s text')
  })

  it('reports connecting, connected and synced in order, and whenSynced resolves', async () => {
    const t = await startTestServer()
    const room = client(t.wsUrl).enter(uniqueRoom('status'))
    const statuses: string[] = [room.status]
    room.on('status', (status) => statuses.push(status))
    let syncedEvents = 0
    room.on('synced', () => syncedEvents++)
    assert.equal(room.syncStatus, 'synchronizing', 'not synchronized before the first sync')
    await room.whenSynced()
    assert.deepEqual(statuses, ['connecting', 'connected', 'synced'])
    assert.equal(room.syncStatus, 'synchronized')
    assert.equal(syncedEvents, 1)
    await room.whenSynced() // at once when already synced
  })

  it('shares presence, lists only others, and drops a user who leaves', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('presence')
    const ada = client(t.wsUrl)
    const a = ada.enter<{ name: string; cursor: { x: number } | null }>(name)
    const b = client(t.wsUrl).enter<{ name: string; cursor: { x: number } | null }>(name)
    b.presence.set({ name: 'Bob', cursor: null })
    const seen: number[] = []
    const stop = b.presence.subscribe((others) => seen.push(others.length))
    a.presence.set({ name: 'Ada', cursor: null })
    a.presence.set({ cursor: { x: 5 } }) // merges, keeping the name
    assert.deepEqual(a.presence.get(), { name: 'Ada', cursor: { x: 5 } })
    await eventually(() => b.presence.others()[0]?.cursor?.x === 5, 'b sees a’s cursor')
    assert.deepEqual(b.presence.others(), [{ clientId: a.doc.clientID, name: 'Ada', cursor: { x: 5 } }])
    assert.ok(seen.length > 0)
    await ada.leave(name)
    await eventually(() => b.presence.others().length === 0, 'a is gone from b’s presence')
    stop()
    const calls = seen.length
    b.presence.set({ name: 'Bobby' })
    assert.equal(seen.length, calls, 'no calls after unsubscribing')
  })

  it('undoes only this user’s own changes', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('undo')
    const a = client(t.wsUrl).enter(name)
    const b = client(t.wsUrl).enter(name)
    await Promise.all([a.whenSynced(), b.whenSynced()])
    const history = a.history(a.map('shapes'))
    let stackChanges = 0
    history.subscribe(() => stackChanges++)
    a.map('shapes').set('a1', 'mine')
    history.stopCapturing()
    b.map('shapes').set('b1', 'theirs')
    await eventually(() => a.map('shapes').has('b1'), 'a has b’s shape')
    assert.ok(history.canUndo())
    assert.equal(history.undo(), true)
    assert.equal(history.undo(), false, 'nothing of a’s is left to undo')
    assert.deepEqual(a.map('shapes').toJSON(), { b1: 'theirs' })
    await eventually(() => !b.map('shapes').has('a1'), 'the undo reaches b')
    assert.equal(b.map('shapes').get('b1'), 'theirs')
    assert.ok(history.canRedo())
    history.redo()
    assert.equal(a.map('shapes').get('a1'), 'mine')
    history.clear()
    assert.equal(history.canUndo() || history.canRedo(), false)
    assert.ok(stackChanges >= 4)
  })

  it('asks getToken for a fresh token before every reconnect', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const link = await TcpLink.open(t.server.port)
    const name = uniqueRoom('tokens')
    const issued: string[] = []
    const room = client(`ws://127.0.0.1:${link.port}`, {
      getToken: async () => {
        const token = await signToken({ room: name, access: 'rw', jti: String(issued.length) })
        issued.push(token)
        return token
      },
    }).enter(name)
    await room.whenSynced()
    assert.equal(issued.length, 1)
    room.map('m').set('before', 1)
    link.cut()
    await eventually(() => room.status !== 'synced', 'the room notices the cut')
    link.restore()
    await eventually(() => room.status === 'synced', 'the room syncs again')
    assert.ok(issued.length >= 2, `getToken called ${issued.length} times`)
    assert.equal(new Set(issued).size, issued.length, 'every attempt carried its own token')
    link.close()
  })

  it('comes back with a fresh token when its token expires while connected, losing nothing', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('expiry')
    let issued = 0
    const writer = client(t.wsUrl, {
      getToken: () => {
        issued++
        return signToken({ room: name, access: 'rw', exp: Math.ceil(Date.now() / 1000) + 2 })
      },
    }).enter(name)
    const errors = recordErrors(writer)
    const reader = client(t.wsUrl, { getToken: () => signToken({ room: name, access: 'ro' }) }).enter(name)
    await Promise.all([writer.whenSynced(), reader.whenSynced()])
    const closedForExpiry = async () =>
      (await t.server.metrics.connectionsClosed.get()).values.find((v) => v.labels.code === 'TokenExpired')
        ?.value ?? 0
    const started = Date.now()
    let written = 0
    while (Date.now() - started < 4_000) {
      writer.list<number>('edits').push([written++]) // edits before, during and after the expiry
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    assert.ok((await closedForExpiry()) >= 1, 'the server closed the expired connection')
    assert.ok(issued >= 2, `getToken called ${issued} times`)
    await eventually(() => writer.status === 'synced', 'back in sync')
    await eventually(() => reader.list('edits').length === written, 'every edit reached the reader', 10_000)
    assert.deepEqual(
      errors.map((e) => e.code),
      [],
      'nothing for the app to handle',
    )
  })

  it('keeps retrying while the identity provider is down (503), and connects when it is back', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' }
    let down = true
    const jwks = await serveJwks(jwk, async () => (down ? 503 : undefined))
    try {
      const t = await startTestServer({ auth: { mode: 'jwt', jwksUrl: jwks.url } })
      const name = uniqueRoom('idp')
      const room = client(t.wsUrl, {
        getToken: () =>
          new SignJWT({ room: name, access: 'rw' })
            .setProtectedHeader({ alg: 'ES256', kid: 'k' })
            .setExpirationTime('1h')
            .sign(privateKey),
      }).enter(name)
      const errors = recordErrors(room)
      await eventually(async () => (await refusals(t, 'AUTH_UNAVAILABLE')) >= 3, 'several attempts refused')
      assert.notEqual(room.status, 'synced')
      down = false
      await room.whenSynced()
      assert.deepEqual(
        errors.map((e) => e.code),
        [],
        'an outage is not a refusal',
      )
    } finally {
      jwks.close()
    }
  })

  it('stops for good when getToken throws AuthDeniedError: AUTH_DENIED once, status failed, never synchronized; reconnect() resumes', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('denied')
    let denied = true
    let calls = 0
    const room = client(t.wsUrl, {
      getToken: () => {
        calls++
        if (denied) throw new AuthDeniedError('your backend answered 403', { cause: 'not a member' })
        return signToken({ room: name, access: 'rw' })
      },
    }).enter(name)
    const errors = recordErrors(room)
    const statuses: string[] = []
    room.on('status', (status) => statuses.push(`${status}${room.error ? `:${room.error.code}` : ''}`))
    await assert.rejects(room.whenSynced(), (error: SymphonyClientError) => {
      assert.equal(error.code, 'AUTH_DENIED')
      assert.match(error.message, /your backend answered 403/)
      assert.ok(error.cause instanceof AuthDeniedError)
      return true
    })
    assert.equal(room.status, 'failed')
    assert.equal(room.error?.code, 'AUTH_DENIED')
    assert.equal(room.syncStatus, 'synchronizing', 'never synchronized')
    assert.equal(statuses.at(-1), 'failed:AUTH_DENIED', 'status listeners find the error')

    // A getToken that fails otherwise (its service is down) is retried: once it has been asked
    // several times, a retrying denied room would have been asked again too.
    let outageCalls = 0
    const outage = client(t.wsUrl, {
      getToken: () => {
        outageCalls++
        throw new Error('token service down')
      },
    }).enter(name)
    const outageErrors = recordErrors(outage)
    await eventually(() => outageCalls >= 3, 'the outage is retried')
    assert.deepEqual(
      outageErrors.map((e) => e.code),
      ['TOKEN_UNAVAILABLE'],
    )
    assert.notEqual(outage.status, 'failed')
    assert.equal(
      outage.syncStatus,
      'synchronizing',
      'an outage before the first sync is not synchronized either',
    )
    assert.equal(calls, 1, 'denied: never asked again')
    assert.deepEqual(
      errors.map((e) => e.code),
      ['AUTH_DENIED'],
    )

    // Another copy of the package (a second bundle) throws its own class: the name is enough.
    const copy = client(t.wsUrl, {
      getToken: () => {
        throw Object.assign(new Error('denied by a copy'), { name: 'AuthDeniedError' })
      },
    }).enter(name)
    await assert.rejects(copy.whenSynced(), { code: 'AUTH_DENIED' })

    denied = false // the user signed in again
    room.reconnect()
    assert.equal(room.error, null)
    await room.whenSynced()
    assert.equal(room.status, 'synced')
    assert.equal(room.syncStatus, 'synchronized')
    assert.equal(calls, 2)
  })

  it('stops on an expired token: one clear error, whenSynced rejects, no reconnect storm', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('expired')
    const token = await signToken({ room: name, exp: Math.floor(Date.now() / 1000) - 60 })
    const room = client(t.wsUrl, { token }).enter(name)
    const errors = recordErrors(room)
    await assert.rejects(room.whenSynced(), (error: SymphonyClientError) => {
      assert.equal(error.code, 'AUTH_REFUSED')
      assert.equal(error.details.status, 401)
      assert.match(error.message, /expired/)
      return true
    })
    // With 20-100 ms backoff, a client that kept retrying would knock many times in this window.
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(await refusals(t, 'TOKEN_INVALID'), 1, 'exactly one upgrade attempt')
    assert.deepEqual(
      errors.map((e) => e.code),
      ['AUTH_REFUSED'],
    )
    assert.equal(room.status, 'failed')
    assert.equal(room.error?.code, 'AUTH_REFUSED')
    assert.equal(room.syncStatus, 'synchronizing', 'never synchronized')
  })

  it('does not retry when getToken hands out a token for another room, and can resume later', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('forbidden')
    let grant = 'another-room'
    let calls = 0
    const room = client(t.wsUrl, {
      getToken: () => {
        calls++
        return signToken({ room: grant, access: 'rw' })
      },
    }).enter(name)
    const error = await room.whenSynced().then(
      () => assert.fail('must not sync'),
      (e: SymphonyClientError) => e,
    )
    assert.equal(error.details.status, 403)
    assert.equal(error.details.serverCode, 'ROOM_FORBIDDEN')
    assert.equal(room.status, 'failed')
    assert.equal(calls, 1)
    grant = name // the user signs in again
    room.reconnect()
    await room.whenSynced()
    assert.equal(calls, 2)
  })

  it('keeps retrying while getToken fails, reporting it once, and connects when it recovers', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('token-outage')
    let failures = 3
    const room = client(t.wsUrl, {
      getToken: () => {
        if (failures-- > 0) throw new Error('auth service down')
        return signToken({ room: name, access: 'rw' })
      },
    }).enter(name)
    const errors = recordErrors(room)
    await room.whenSynced()
    assert.deepEqual(
      errors.map((e) => [e.code, e.message]),
      [['TOKEN_UNAVAILABLE', 'getToken failed: auth service down']],
    )
  })

  it('reports a read-only token once and keeps syncing down', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const name = uniqueRoom('read-only')
    const writer = client(t.wsUrl, { token: await signToken({ room: name, access: 'rw' }) }).enter(name)
    const reader = client(t.wsUrl, { token: await signToken({ room: name, access: 'ro' }) }).enter(name)
    const errors = recordErrors(reader)
    await Promise.all([writer.whenSynced(), reader.whenSynced()])
    reader.map('m').set('x', 1)
    reader.map('m').set('y', 2)
    writer.map('m').set('w', 1)
    await eventually(() => reader.map('m').get('w') === 1, 'the reader still receives')
    await eventually(() => errors.length > 0, 'the reader is told')
    assert.deepEqual(
      errors.map((e) => e.code),
      ['READ_ONLY'],
    )
    assert.equal(writer.map('m').has('x'), false)
  })

  for (const { name, limits, closeCode } of [
    { name: 'document too large', limits: { maxDocumentBytes: 2_000 }, closeCode: 4004 },
    { name: 'message too big', limits: { maxMessageBytes: 2_000 }, closeCode: 1009 },
  ]) {
    it(`stops when the server closes with a final code (${name}) instead of resending in a loop`, async () => {
      const t = await startTestServer({ limits })
      const room = client(t.wsUrl).enter(uniqueRoom('too-large'))
      await room.whenSynced()
      const errors = recordErrors(room)
      room.text('t').insert(0, 'x'.repeat(5_000))
      await eventually(() => errors.length > 0, 'the close is reported')
      assert.equal(errors[0]?.code, 'CLOSED_BY_SERVER')
      assert.equal(errors[0]?.details.closeCode, closeCode)
      assert.equal(room.status, 'failed')
      await assert.rejects(room.whenSynced(), { code: 'CLOSED_BY_SERVER' })
      const closes = (await t.server.metrics.connectionsClosed.get()).values.reduce(
        (sum, v) => sum + v.value,
        0,
      )
      assert.equal(closes, 1, 'closed once, never reconnected to be closed again')
    })
  }

  it('abandons an attempt that hangs in getToken and tries again', async () => {
    const t = await startTestServer()
    let calls = 0
    const room = client(t.wsUrl, {
      connectTimeoutMs: 100,
      getToken: () => (++calls === 1 ? new Promise<string>(() => {}) : 'unused-token'),
    }).enter(uniqueRoom('hung-token'))
    await room.whenSynced()
    assert.equal(calls, 2)
  })

  it('reports a URL the WebSocket constructor rejects, once, without retrying', async () => {
    let constructed = 0
    class RefusingWebSocket {
      constructor() {
        constructed++
        throw new SyntaxError(
          'An insecure WebSocket connection may not be initiated from a page loaded over HTTPS.',
        )
      }
    }
    const room = client('ws://127.0.0.1:9', {
      WebSocket: RefusingWebSocket as unknown as typeof globalThis.WebSocket,
    }).enter(uniqueRoom('insecure'))
    await assert.rejects(room.whenSynced(), (error: SymphonyClientError) => {
      assert.equal(error.code, 'CONNECTION_FAILED')
      assert.match(error.message, /insecure WebSocket/)
      return true
    })
    assert.equal(constructed, 1)
    assert.equal(room.status, 'failed')
  })

  it('keeps working when an app listener throws', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('throwing-listener')
    const a = client(t.wsUrl).enter(name)
    const b = client(t.wsUrl).enter(name)
    const reported: unknown[] = []
    const originalConsoleError = console.error
    console.error = (error: unknown) => reported.push(error)
    try {
      a.on('status', () => {
        throw new Error('app bug in a status listener')
      })
      a.presence.subscribe(() => {
        throw new Error('app bug in a presence listener')
      })
      await a.whenSynced()
      b.presence.set({ name: 'Bob' })
      b.map('m').set('k', 1)
      await eventually(() => a.map('m').get('k') === 1 && a.presence.others().length === 1, 'a still syncs')
    } finally {
      console.error = originalConsoleError
    }
    assert.ok(reported.some((e) => e instanceof Error && e.message === 'app bug in a status listener'))
    assert.ok(reported.some((e) => e instanceof Error && e.message === 'app bug in a presence listener'))
  })

  it('undoes this user’s changes anywhere in the room when history() names no types', async () => {
    const t = await startTestServer()
    const name = uniqueRoom('undo-room')
    const a = client(t.wsUrl).enter(name)
    const b = client(t.wsUrl).enter(name)
    await Promise.all([a.whenSynced(), b.whenSynced()])
    const history = a.history()
    a.list<string>('todos').push(['mine'])
    history.stopCapturing()
    a.map('later').set('k', 'made after the history') // a type the history could not have named
    history.stopCapturing()
    b.list<string>('todos').push(['theirs'])
    await eventually(() => a.list('todos').length === 2, 'a has b’s item')
    assert.equal(history.undo(), true)
    assert.equal(a.map('later').has('k'), false)
    assert.equal(history.undo(), true)
    assert.equal(history.undo(), false, 'nothing of a’s is left to undo')
    assert.deepEqual(a.list('todos').toJSON(), ['theirs'])
    history.redo()
    history.clear()
    assert.equal(history.canUndo() || history.canRedo(), false, 'clearing is not a step of its own')
  })

  it('stops tracking a destroyed history', async () => {
    const t = await startTestServer()
    const room = client(t.wsUrl).enter(uniqueRoom('history-destroy'))
    const history = room.history(room.map('m'))
    room.map('m').set('a', 1)
    assert.equal(history.canUndo(), true)
    history.destroy()
    history.clear()
    room.map('m').set('b', 2)
    assert.equal(history.canUndo(), false)
  })

  it('rejects bad options and room names with clear errors', () => {
    const WebSocketImpl = WebSocket as unknown as typeof globalThis.WebSocket
    assert.throws(() => createClient({ url: 'not a url', WebSocket: WebSocketImpl }), /not a URL/)
    assert.throws(() => createClient({ url: 'ftp://x', WebSocket: WebSocketImpl }), /ws:\/\/, wss:\/\//)
    assert.throws(
      () => createClient({ url: 'ws://x', WebSocket: WebSocketImpl, token: 't', getToken: () => 't' }),
      /not both/,
    )
    // Made anywhere (server rendering too); the runtime is checked when a room is entered.
    const offline = createClient({ url: 'ws://x', WebSocket: WebSocketImpl, offline: true })
    assert.throws(() => offline.enter('r'), /IndexedDB/)
    // A runtime without a WebSocket (Node before 22): clear error when a room is entered.
    const globalWebSocket = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket')
    Reflect.deleteProperty(globalThis, 'WebSocket')
    try {
      assert.throws(() => createClient({ url: 'ws://x' }).enter('r'), /no WebSocket/)
    } finally {
      if (globalWebSocket) Object.defineProperty(globalThis, 'WebSocket', globalWebSocket)
    }
    assert.throws(() => client('ws://x').enter('a\nb'), /invalid room name "a\\nb"/)
    assert.throws(() => client('ws://x').enter('..'), /invalid room name "\.\."/)
    assert.throws(() => client('ws://x').enter('x'.repeat(129)), /1-128 Unicode characters/)
    assert.throws(() => client('ws://x', { reconnect: { baseDelayMs: -1 } }), RangeError)
    assert.throws(() => client('ws://x', { connectTimeoutMs: 0 }), /connectTimeoutMs/)
  })

  it('clears the document and the undo history when the room is deleted on the server', async () => {
    const apiSecret = 'api-secret-for-tests-0123456789abcdef'
    const t = await startTestServer({ apiSecret })
    const name = uniqueRoom('deleted')
    const room = client(t.wsUrl).enter(name)
    const peer = client(t.wsUrl).enter(name)
    await Promise.all([room.whenSynced(), peer.whenSynced()])
    const history = room.history()
    let stackChanges = 0
    history.subscribe(() => stackChanges++)
    room.list<string>('todos').push(['mine'])
    room.text('title').insert(0, 'Plans')
    peer.map('settings').set('theme', 'dark')
    peer.doc.getMap('never-read-here').set('k', 'v') // a type this copy holds but never asked for
    peer.doc.getXmlFragment('prose').insert(0, [new Y.XmlText('hello')])
    await eventually(() => room.map('settings').get('theme') === 'dark', 'the peer’s edits arrive')
    await eventually(() => room.doc.share.has('prose'), 'the peer’s prose arrives')
    await eventually(() => !room.hasUnsyncedChanges(), 'the server holds this copy’s edits')
    const todosEvents: number[] = []
    room.list('todos').observe(() => todosEvents.push(room.list('todos').length))
    assert.equal(history.canUndo(), true)
    const errors = recordErrors(room)

    const deleted = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(name)}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${apiSecret}` },
    })
    assert.equal(deleted.status, 204)
    await eventually(() => errors.some((e) => e.code === 'ROOM_DELETED'), 'the room is told')
    assert.equal(room.status, 'failed')
    assert.equal(room.list('todos').length, 0)
    assert.deepEqual(todosEvents, [0], 'observers hear the list emptied')
    assert.equal(room.text('title').toString(), '')
    assert.equal(room.map('settings').size, 0)
    assert.equal(room.map('never-read-here').size, 0)
    assert.equal(room.doc.getXmlFragment('prose').length, 0)
    assert.equal(history.canUndo() || history.canRedo(), false, 'nothing to undo')
    assert.ok(stackChanges > 0, 'history subscribers hear it')
    assert.equal(room.history().canUndo(), false)
    assert.equal(room.hasUnsyncedChanges(), false, 'the deleted room’s content waits for no server')
    room.list<string>('todos').push(['after']) // edits still work locally, and are never sent
    assert.equal(room.list('todos').length, 1)
  })

  it('leaves cleanly: whenSynced rejects, and the doc is destroyed', async () => {
    const t = await startTestServer()
    const c = client(t.wsUrl)
    const name = uniqueRoom('leave')
    const room = c.enter(name)
    const pending = room.whenSynced()
    await c.leave(name)
    await assert.rejects(pending, { code: 'ROOM_LEFT' })
    assert.notEqual(c.enter(name), room, 'entering again opens a new room')
    assert.equal(room.doc.isDestroyed, true)
  })
})
