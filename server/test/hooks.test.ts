import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import type { SymphonyClientError } from '@symphony/client'
import type { EventSender } from '@symphony/client/wire'
import { CloseCode } from '@symphony/client/wire'
import { destroyNodeClients, nodeClient } from '@symphony/test-helpers/node-client'
import * as Y from 'yjs'
import { refuse, type ServerHooks, type UpdateToApply } from '../src/server-hooks.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, type TestClient, uniqueRoom } from './helpers/clients.js'
import { deferred } from './helpers/deferred.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { startTestCluster, startTestServer, type TestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

/** A schema check: every value of the root map `todos` is `{ title: string, done: boolean }`. */
function todosValid(update: UpdateToApply): void {
  const todos = update.documentAfter().getMap('todos').toJSON()
  for (const [id, todo] of Object.entries(todos)) {
    const { title, done } = (todo ?? {}) as { title?: unknown; done?: unknown }
    if (typeof title !== 'string' || typeof done !== 'boolean') refuse(`todo ${id} is not { title, done }`)
  }
}

function closeOf(client: TestClient): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    client.provider.once('connection-close', (event) =>
      resolve({ code: event?.code ?? 0, reason: event?.reason ?? '' }),
    ),
  )
}

/** `POST /api/v1/rooms/<room>/update` on `t`. */
function post(t: TestServer, room: string, update: Uint8Array) {
  return fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/update`, {
    method: 'POST',
    body: new Blob([update as Uint8Array<ArrayBuffer>]),
    headers: { authorization: `Bearer ${API_SECRET}`, 'content-type': 'application/octet-stream' },
  })
}

async function documentOf(t: TestServer, room: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/document`, {
    headers: { authorization: `Bearer ${API_SECRET}` },
  })
  assert.equal(response.status, 200)
  return (await response.json()) as Record<string, unknown>
}

/** An update setting `todos[id]` to `value`, from a document of its own. */
function todoUpdate(id: string, value: Record<string, unknown>): Uint8Array {
  const doc = new Y.Doc()
  doc.getMap('todos').set(id, value)
  return Y.encodeStateAsUpdate(doc)
}

describe('beforeApply', () => {
  it("refuses an update that breaks the app's schema: its author is closed with 4422, nobody sees it, nothing of it is kept", async () => {
    const hooks: ServerHooks = { beforeApply: todosValid }
    const t = await startTestServer({ hooks, apiSecret: API_SECRET })
    const room = uniqueRoom('schema')
    const alice = await connectSynced(t.wsUrl, room)
    const bob = await connectSynced(t.wsUrl, room)
    alice.doc.getMap('todos').set('a', { title: 'milk', done: false })
    await eventually(() => bob.doc.getMap('todos').has('a'), 'a valid edit reaches bob')

    const closed = closeOf(alice)
    alice.doc.getMap('todos').set('b', { title: 42 })
    const { code, reason } = await closed
    assert.equal(code, CloseCode.UpdateRefused)
    assert.equal(reason, 'todo b is not { title, done }')
    // Bob edits after: his edit reaches the server, the refused one never does.
    bob.doc.getMap('todos').set('c', { title: 'eggs', done: true })
    await eventually(async () => {
      const todos = (await documentOf(t, room)).todos as Record<string, unknown>
      return 'c' in todos
    }, "bob's later edit is applied")
    assert.deepEqual(Object.keys(bob.doc.getMap('todos').toJSON()).sort(), ['a', 'c'])
    assert.deepEqual(Object.keys((await documentOf(t, room)).todos as object).sort(), ['a', 'c'])
    // Nothing journaled: the room loads again from its stores without it.
    alice.destroy()
    bob.destroy()
    await eventually(() => t.server.manager.roomState(room) === 'gone', 'the room unloaded')
    assert.deepEqual(Object.keys((await documentOf(t, room)).todos as object).sort(), ['a', 'c'])
  })

  it('answers a refused REST write 422 UPDATE_REFUSED with the reason, and applies an accepted one', async () => {
    const seen: UpdateToApply[] = []
    const t = await startTestServer({
      apiSecret: API_SECRET,
      hooks: {
        beforeApply: (update) => {
          seen.push(update)
          todosValid(update)
        },
      },
    })
    const room = uniqueRoom('schema-rest')
    const refused = await post(t, room, todoUpdate('x', { title: 'no done' }))
    assert.equal(refused.status, 422)
    assert.deepEqual(await refused.json(), {
      error: { code: 'UPDATE_REFUSED', message: 'todo x is not { title, done }' },
    })
    assert.equal((await post(t, room, todoUpdate('y', { title: 'ok', done: true }))).status, 204)
    assert.deepEqual((await documentOf(t, room)).todos, { y: { title: 'ok', done: true } })
    assert.equal(seen[0]?.origin, 'rest')
    assert.equal(seen[0]?.user.userId, 'symphony:api')
    assert.equal(seen[0]?.connectionId, null)
  })

  it('sees a restore with its origin and version, and may refuse it like any write (422)', async () => {
    const seen: UpdateToApply[] = []
    let refuseRestores = true
    const t = await startTestServer({
      apiSecret: API_SECRET,
      hooks: {
        beforeApply: (update) => {
          seen.push(update)
          if (update.origin === 'restore' && refuseRestores) refuse('restores are off')
        },
      },
    })
    const room = uniqueRoom('restore')
    const api = `${t.httpUrl}/api/v1/rooms/${encodeURIComponent(room)}/versions`
    const headers = { authorization: `Bearer ${API_SECRET}` }
    assert.equal((await post(t, room, todoUpdate('a', { title: 'first', done: false }))).status, 204)
    await t.server.manager.save(room)
    assert.equal((await post(t, room, todoUpdate('b', { title: 'second', done: false }))).status, 204)
    const { versions } = (await (await fetch(api, { headers })).json()) as { versions: { id: string }[] }
    const oldest = versions.at(-1)?.id ?? ''
    const refused = await fetch(`${api}/${encodeURIComponent(oldest)}/restore`, { method: 'POST', headers })
    assert.equal(refused.status, 422)
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'UPDATE_REFUSED')
    const restore = seen.find((update) => update.origin === 'restore')
    assert.equal(restore?.version, oldest)
    assert.equal(restore?.user.userId, 'symphony:api')
    refuseRestores = false
    const restored = await fetch(`${api}/${encodeURIComponent(oldest)}/restore`, { method: 'POST', headers })
    assert.equal(restored.status, 200)
    assert.deepEqual(Object.keys((await documentOf(t, room)).todos as object), ['a'])
  })

  it('gives a client update its author and connection; a hook that throws refuses (fail closed) and is logged', async () => {
    const logger = recordingLogger()
    const seen: UpdateToApply[] = []
    const t = await startTestServer({
      logger,
      hooks: {
        beforeApply: (update) => {
          seen.push(update)
          if (update.documentAfter().getText('t').toString().includes('boom'))
            throw new Error('validator bug')
        },
      },
    })
    const room = uniqueRoom('throws')
    const alice = await connectSynced(t.wsUrl, room)
    alice.doc.getText('t').insert(0, 'fine')
    await eventually(() => seen.length === 1, 'the hook saw the edit')
    assert.equal(seen[0]?.origin, 'client')
    assert.equal(seen[0]?.user.userId, 'anonymous')
    assert.match(seen[0]?.connectionId ?? '', /:/)
    const closed = closeOf(alice)
    alice.doc.getText('t').insert(0, 'boom')
    assert.deepEqual(await closed, {
      code: CloseCode.UpdateRefused,
      reason: 'the server could not check this update',
    })
    assert.ok(
      logger.entries.some((entry) => entry.level === 'error' && /beforeApply threw/.test(entry.message)),
      'logged',
    )
  })

  it("keeps one client's updates in the order sent while an async hook decides, and other rooms go on meanwhile", async () => {
    const slow = deferred<void>()
    const calls: string[] = []
    const t = await startTestServer({
      hooks: {
        beforeApply: async (update) => {
          const text = update.documentAfter().getText('t').toString()
          calls.push(`start ${text}`)
          if (update.room.startsWith('ordered') && text === 'a') await slow.promise
          calls.push(`end ${text}`)
        },
      },
    })
    const room = uniqueRoom('ordered')
    const alice = await connectSynced(t.wsUrl, room)
    const bob = await connectSynced(t.wsUrl, room)
    alice.doc.getText('t').insert(0, 'a')
    await eventually(() => calls.includes('start a'), 'the first update waits on the hook')
    alice.doc.getText('t').insert(1, 'b')
    // Another room is not held by this one's hook.
    const other = uniqueRoom('other')
    const carol = await connectSynced(t.wsUrl, other)
    const dave = await connectSynced(t.wsUrl, other)
    carol.doc.getText('t').insert(0, 'x')
    await eventually(() => dave.doc.getText('t').toString() === 'x', 'the other room syncs meanwhile')
    assert.equal(bob.doc.getText('t').toString(), '', 'nothing of the held updates is seen yet')
    assert.ok(!calls.includes('start ab'), "alice's next update waits for the first one's verdict")
    slow.resolve()
    await eventually(() => bob.doc.getText('t').toString() === 'ab', 'both applied, in order')
    assert.deepEqual(
      calls.filter((call) => !call.endsWith('x')),
      ['start a', 'end a', 'start ab', 'end ab'],
    )
  })

  it('refuses as busy (1013, REST 503) a hook that does not answer within hookTimeoutMs, and accepts one that does', async () => {
    const t = await startTestServer({
      apiSecret: API_SECRET,
      hookTimeoutMs: 200,
      hooks: {
        beforeApply: (update) =>
          update.documentAfter().getText('t').toString() === 'hang' ? new Promise(() => {}) : undefined,
      },
    })
    const room = uniqueRoom('timeout')
    const alice = await connectSynced(t.wsUrl, room)
    alice.doc.getText('t').insert(0, 'ok')
    const bob = await connectSynced(t.wsUrl, room)
    await eventually(() => bob.doc.getText('t').toString() === 'ok', 'a quick verdict applies')
    const hung = new Y.Doc()
    hung.getText('t').insert(0, 'hang')
    const response = await post(t, uniqueRoom('timeout-rest'), Y.encodeStateAsUpdate(hung))
    assert.equal(response.status, 503)
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'SERVER_BUSY')
    const closed = closeOf(alice)
    alice.doc.getText('t').delete(0, 2)
    alice.doc.getText('t').insert(0, 'hang')
    assert.equal((await closed).code, CloseCode.TryAgainLater)
  })

  it("reserves documentAfter()'s copy against the memory budget: a copy that does not fit refuses the update as busy (1013)", async () => {
    const t = await startTestServer({
      limits: { memoryBudgetBytes: 4 * 1024 * 1024 },
      hooks: {
        beforeApply: (update) => {
          if (update.origin === 'client') update.documentAfter()
        },
      },
    })
    const name = uniqueRoom('scratch-budget')
    // 300 KB of text: the document fits the budget, a scratch copy of it (16 bytes a byte) does not.
    const big = new Y.Doc()
    big.getText('t').insert(0, 'x'.repeat(300_000))
    await t.server.room(name).applyUpdate(Y.encodeStateAsUpdate(big))
    const alice = await connectSynced(t.wsUrl, name)
    const closed = closeOf(alice)
    alice.doc.getText('t').insert(0, 'y')
    assert.equal((await closed).code, CloseCode.TryAgainLater)
    assert.equal((await t.server.room(name).toJSON()).t, 'x'.repeat(300_000), 'not applied')
  })

  it('is not run again for a peer’s update: the server the author is connected to checks it once', async () => {
    const checkedOn: string[] = []
    const [a, b] = await startTestCluster({
      hooks: {
        beforeApply: (update) => {
          checkedOn.push(update.connectionId ?? '')
        },
      },
    })
    const room = uniqueRoom('peer')
    const onA = await connectSynced(a.wsUrl, room)
    const onB = await connectSynced(b.wsUrl, room)
    onA.doc.getText('t').insert(0, 'from a')
    await eventually(() => onB.doc.getText('t').toString() === 'from a', 'the edit reaches server b')
    assert.equal(checkedOn.length, 1, 'checked once, on server a')
  })
})

/** A new room's first content, the same bytes every time: a document with a fixed client id. */
function welcomeSeed(): Uint8Array {
  const doc = new Y.Doc()
  doc.clientID = 1
  doc.getText('t').insert(0, 'welcome')
  return Y.encodeStateAsUpdate(doc)
}

describe('onLoad', () => {
  it('seeds a room that has nothing stored; once saved, the room loads from its stores and is not seeded again', async () => {
    const loads: string[] = []
    const t = await startTestServer({
      hooks: {
        onLoad: ({ room }) => {
          loads.push(room)
          return welcomeSeed()
        },
      },
    })
    const room = uniqueRoom('seeded')
    const alice = await connectSynced(t.wsUrl, room)
    assert.equal(alice.doc.getText('t').toString(), 'welcome')
    alice.doc.getText('t').insert(7, '!')
    await eventually(
      () => t.server.manager.loadedRoom(room)?.doc.getText('t').toString() === 'welcome!',
      'applied',
    )
    alice.destroy()
    await eventually(() => t.server.manager.roomState(room) === 'gone', 'the room unloaded')
    const bob = await connectSynced(t.wsUrl, room)
    assert.equal(bob.doc.getText('t').toString(), 'welcome!', 'loaded from the stores, seeded once')
    assert.deepEqual(loads, [room])
  })

  it('fails the load when it throws or does not answer within hookTimeoutMs; the load is retried while the client waits', async () => {
    const logger = recordingLogger()
    let calls = 0
    const t = await startTestServer({
      logger,
      hookTimeoutMs: 200,
      roomLoadRetryMs: 20,
      roomLoadRetryMaxMs: 50,
      hooks: {
        onLoad: () => {
          calls++
          if (calls === 1) throw new Error('app database down')
          if (calls === 2) return new Promise<Uint8Array>(() => {}) // hangs past the timeout
          return welcomeSeed()
        },
      },
    })
    const alice = await connectSynced(t.wsUrl, uniqueRoom('seed-retry'))
    assert.equal(alice.doc.getText('t').toString(), 'welcome')
    assert.equal(calls, 3)
    const failures = logger.entries.filter((entry) => /room load failed/.test(entry.message))
    assert.ok(failures.length >= 1, 'the failed loads are logged')
  })
})

describe('onStore', () => {
  it('gets each saved state after the save; a failure is logged and the room saved and handed over again', async () => {
    const logger = recordingLogger()
    const stored: { room: string; text: string }[] = []
    let fail = true
    const t = await startTestServer({
      logger,
      snapshot: { intervalMs: 100, retryBaseMs: 20, retryMaxMs: 200 },
      hooks: {
        onStore: ({ room, document }) => {
          if (fail) {
            fail = false
            throw new Error('search index down')
          }
          stored.push({ room, text: document().getText('t').toString() })
        },
      },
    })
    const room = uniqueRoom('stored')
    const alice = await connectSynced(t.wsUrl, room)
    alice.doc.getText('t').insert(0, 'indexed')
    // The first hand-over fails; with no further edit, the next interval saves and hands over again.
    await eventually(() => stored.length > 0, 'handed over after the failure')
    assert.deepEqual(stored[0], { room, text: 'indexed' })
    assert.ok(logger.entries.some((entry) => entry.level === 'error' && /onStore failed/.test(entry.message)))
  })
})

describe('app messages', () => {
  it('hands a message to its handler with the sender; the reply goes to the sender, a broadcast to everyone, a refusal back as an error', async () => {
    const logger = recordingLogger()
    let nextId = 1
    const t = await startTestServer({
      logger,
      hookTimeoutMs: 200,
      hooks: {
        messages: {
          'comment.add': ({ data, user, broadcast }) => {
            const { text } = (data ?? {}) as { text?: unknown }
            if (typeof text !== 'string' || text === '') refuse('a comment needs some text')
            const comment = { id: nextId++, text, by: user.userId }
            broadcast({ type: 'comment.added', comment })
            return comment
          },
          'comment.crash': () => {
            throw new Error('handler bug')
          },
          'comment.hang': () => new Promise(() => {}),
        },
      },
    })
    const room = uniqueRoom('messages')
    const alice = nodeClient(t.wsUrl).enter(room)
    const bob = nodeClient(t.wsUrl).enter(room)
    await Promise.all([alice.whenSynced(), bob.whenSynced()])
    const heard: { data: unknown; from: EventSender | null }[] = []
    bob.on('event', (data, from) => heard.push({ data, from }))

    assert.deepEqual(await alice.request('comment.add', { text: 'looks good' }), {
      id: 1,
      text: 'looks good',
      by: 'anonymous',
    })
    await eventually(() => heard.length === 1, 'bob hears the broadcast')
    assert.deepEqual(heard[0]?.data, {
      type: 'comment.added',
      comment: { id: 1, text: 'looks good', by: 'anonymous' },
    })
    assert.equal(heard[0]?.from?.userId, 'symphony:api', "stamped as the server's")

    const refusal = (await alice
      .request('comment.add', { text: '' })
      .catch((error) => error)) as SymphonyClientError
    assert.equal(refusal.code, 'MESSAGE_REFUSED')
    assert.equal(refusal.details.serverCode, 'MESSAGE_REFUSED')
    assert.equal(refusal.message, 'a comment needs some text')
    const unknown = (await alice.request('comment.edit', {}).catch((error) => error)) as SymphonyClientError
    assert.equal(unknown.details.serverCode, 'UNKNOWN_MESSAGE_TYPE')
    const crashed = (await alice.request('comment.crash', {}).catch((error) => error)) as SymphonyClientError
    assert.equal(crashed.details.serverCode, 'MESSAGE_FAILED')
    assert.ok(logger.entries.some((entry) => entry.level === 'error' && /handler threw/.test(entry.message)))
    // Past hookTimeoutMs the sender is answered; the connection is fine after every refusal.
    const hung = (await alice.request('comment.hang', {}).catch((error) => error)) as SymphonyClientError
    assert.equal(hung.details.serverCode, 'HOOK_TIMEOUT')
    assert.deepEqual(await alice.request('comment.add', { text: 'again' }), {
      id: 2,
      text: 'again',
      by: 'anonymous',
    })
    assert.equal(alice.status, 'synced')
  })

  it("handles at most 32 of one user's messages at once, across reconnects and rooms, counted until each handler settles, even past hookTimeoutMs", async () => {
    const settled = deferred()
    let started = 0
    const t = await startTestServer({
      auth: { mode: 'jwt', secret: TEST_SECRET },
      hookTimeoutMs: 100,
      hooks: {
        messages: {
          slow: async () => {
            started++
            await settled.promise // an app handler that hangs on its database, say
            return 'done'
          },
        },
      },
    })
    const room = uniqueRoom('messages-running')
    const aliceClient = nodeClient(t.wsUrl, {
      token: await signToken({ room: '*', access: 'rw', sub: 'alice' }),
    })
    const asAlice = async (name: string) =>
      nodeClient(t.wsUrl, { token: await signToken({ room: name, access: 'rw', sub: 'alice' }) }).enter(name)
    const alice = aliceClient.enter(room)
    const bob = nodeClient(t.wsUrl, { token: await signToken({ room, access: 'rw', sub: 'bob' }) }).enter(
      room,
    )
    await Promise.all([alice.whenSynced(), bob.whenSynced()])
    const codeOf = (request: Promise<unknown>) =>
      request.then(
        () => 'replied',
        (error: SymphonyClientError) => String(error.details.serverCode),
      )
    const answers = await Promise.all(Array.from({ length: 34 }, () => codeOf(alice.request('slow', {}))))
    assert.equal(answers.filter((answer) => answer === 'HOOK_TIMEOUT').length, 32)
    assert.equal(answers.filter((answer) => answer === 'TOO_MANY_MESSAGES').length, 2)
    assert.equal(started, 32)
    // Timed out, yet still running: they still count, for alice however she connects.
    await aliceClient.destroy()
    const again = await asAlice(room)
    const elsewhere = await asAlice(uniqueRoom('messages-elsewhere'))
    await Promise.all([again.whenSynced(), elsewhere.whenSynced()])
    assert.equal(await codeOf(again.request('slow', {})), 'TOO_MANY_MESSAGES')
    assert.equal(await codeOf(elsewhere.request('slow', {})), 'TOO_MANY_MESSAGES')
    assert.equal(t.server.memory.usedBy('app-messages') > 0, true, 'what they hold is charged')
    assert.equal(await codeOf(bob.request('slow', {})), 'HOOK_TIMEOUT', 'another user is served')
    settled.resolve()
    await eventually(
      async () => (await codeOf(again.request('slow', {}))) === 'replied',
      'served once settled',
    )
    await eventually(() => t.server.memory.usedBy('app-messages') === 0, 'and uncharged')
  })

  it("bounds what one user's messages being handled hold by what their JSON builds, not only their count", async () => {
    const settled = deferred()
    const t = await startTestServer({
      hookTimeoutMs: 100,
      hooks: { messages: { slow: () => settled.promise.then(() => 'done') } },
    })
    const room = uniqueRoom('messages-heavy')
    const alice = nodeClient(t.wsUrl).enter(room)
    await alice.whenSynced()
    // 15 KiB of `{}`: 5,000 objects, 350 KiB once parsed.
    const heavy = Array.from({ length: 5_000 }, () => ({}))
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        alice.request('slow', heavy).then(
          () => 'replied',
          (error: SymphonyClientError) => String(error.details.serverCode),
        ),
      ),
    )
    assert.deepEqual(
      answers.sort(),
      ['HOOK_TIMEOUT', 'TOO_MANY_MESSAGES', 'TOO_MANY_MESSAGES', 'TOO_MANY_MESSAGES'],
      'one such message at a time',
    )
    assert.ok(t.server.memory.usedBy('app-messages') <= 512 * 1024)
    settled.resolve()
  })
})
