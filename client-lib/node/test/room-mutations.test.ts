import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { cleanUpAfterTest } from '@symphony/test-helpers/cleanup'
import { connectClient, connectSynced, eventually, synced, uniqueRoom } from '@symphony/test-helpers/clients'
import { startTestServer } from '@symphony/test-helpers/test-server'
import { TEST_SECRET } from '@symphony/test-helpers/tokens'
import * as Y from 'yjs'
import { createRoomsApi, createToken, SymphonyApiError } from '../src/index.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

afterEach(cleanUpAfterTest)

/**
 * A fetch that records each POST's body; `answer` may stand in for the server's answer to the
 * nth POST (0-based), after the request reached it (`lose`) or instead of sending it (`refuse`).
 */
function recordingFetch(answer: (n: number) => 'lose' | 'refuse' | 'send' = () => 'send') {
  const posts: Uint8Array[] = []
  const recorded: typeof fetch = async (input, init) => {
    if (init?.method !== 'POST') return fetch(input, init)
    const n = posts.length
    posts.push(new Uint8Array(await (init.body as Blob).arrayBuffer()))
    const what = answer(n)
    if (what === 'refuse') {
      const error = { error: { code: 'UPDATE_NOT_SAVED', message: 'the stores are failing' } }
      return new Response(JSON.stringify(error), { status: 503 })
    }
    const response = await fetch(input, init)
    if (what === 'lose') throw new TypeError('fetch failed') // what undici throws when the connection drops
    return response
  }
  return { fetch: recorded, posts }
}

/** The client ids an update writes structs under, and whether it deletes anything. */
function written(update: Uint8Array): { clients: Set<number>; deletes: boolean } {
  const { structs, ds } = Y.decodeUpdate(update)
  return { clients: new Set(structs.map((s) => s.id.client)), deletes: ds.clients.size > 0 }
}

describe('RoomsApi.mutate against a real server', () => {
  it('runs the change on the room’s state and posts only what it made', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const recorder = recordingFetch()
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET, fetch: recorder.fetch })
    const room = uniqueRoom('mutate')
    const client = await connectSynced(t.wsUrl, room)
    client.doc.getText('notes').insert(0, 'x'.repeat(20_000))
    client.doc.getArray<string>('todos').push(['milk'])
    await eventually(async () => (await api.getDocument(room)).todos !== undefined, 'the client’s edits')

    const count = await api.mutate(room, (doc) => {
      const todos = doc.getArray<string>('todos')
      todos.push([`eggs after ${todos.get(0)}`])
      doc.getMap('meta').set('by', 'backend')
      return todos.length
    })
    assert.equal(count, 2, 'the change saw the room’s state and its result is returned')
    await eventually(() => client.doc.getArray('todos').length === 2, 'the client sees the change')
    assert.deepEqual(client.doc.getArray('todos').toJSON(), ['milk', 'eggs after milk'])
    assert.equal(client.doc.getMap('meta').get('by'), 'backend')

    assert.equal(recorder.posts.length, 1)
    const post = recorder.posts[0] as Uint8Array
    assert.ok(post.length < 200, `only the difference: ${post.length} bytes, the room holds 20 kB`)
    const { clients, deletes } = written(post)
    assert.equal(clients.size, 1, 'one client id of its own')
    assert.ok(!clients.has(client.doc.clientID), 'not the user’s')
    assert.equal(deletes, false)

    assert.equal(await api.mutate(room, (doc) => doc.getArray('todos').length), 2)
    assert.equal(recorder.posts.length, 1, 'a change that changed nothing posts nothing')
    await assert.rejects(
      api.mutate(room, () => {
        throw new Error('the change failed')
      }),
      /the change failed/,
    )
    await assert.rejects(
      api.mutate(room, async (doc) => {
        doc.getArray('todos').push(['never'])
        throw new Error('later')
      }),
      /later/,
    )
    assert.equal(recorder.posts.length, 1, 'a change that throws posts nothing')
  })

  it('writes a room under one client id across calls, and runs one object’s calls on a room one at a time', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const recorder = recordingFetch()
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET, fetch: recorder.fetch })
    const room = uniqueRoom('counter')
    // Read-modify-write: only right if no two of these run at once.
    const increments = Array.from({ length: 8 }, () =>
      api.mutate(room, (doc) => {
        const counter = doc.getMap<number>('counter')
        counter.set('n', (counter.get('n') ?? 0) + 1)
      }),
    )
    await Promise.all(increments)
    assert.deepEqual(await api.getDocument(room), { counter: { n: 8 } })
    const ids = new Set(recorder.posts.flatMap((post) => [...written(post).clients]))
    assert.equal(ids.size, 1, 'every write under the same client id')

    const other = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    await Promise.all([
      api.mutate(room, (doc) => doc.getArray('log').push(['a'])),
      other.mutate(room, (doc) => doc.getArray('log').push(['b'])),
      api.mutate(uniqueRoom('elsewhere'), (doc) => doc.getArray('log').push(['c'])),
    ])
    const log = (await api.getDocument(room)).log as string[]
    assert.deepEqual([...log].sort(), ['a', 'b'], 'two backends at once: both edits merge')
  })

  it('retries a post whose answer was lost with the same bytes, so it lands once', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const recorder = recordingFetch((n) => (n === 0 ? 'lose' : n === 1 ? 'refuse' : 'send'))
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET, fetch: recorder.fetch })
    const room = uniqueRoom('retry')
    await api.mutate(room, (doc) => doc.getArray('log').push(['once']), { retryDelayMs: 1 })
    assert.equal(recorder.posts.length, 3, 'lost, refused with 503, then answered')
    assert.deepEqual(recorder.posts[1], recorder.posts[0])
    assert.deepEqual(recorder.posts[2], recorder.posts[0])
    assert.deepEqual(await api.getDocument(room), { log: ['once'] })

    const failing = recordingFetch(() => 'refuse')
    const down = createRoomsApi({ url: t.httpUrl, secret: API_SECRET, fetch: failing.fetch })
    await assert.rejects(
      down.mutate(room, (doc) => doc.getArray('log').push(['x']), { retries: 2, retryDelayMs: 1 }),
      {
        status: 503,
        code: 'UPDATE_NOT_SAVED',
      },
    )
    assert.equal(failing.posts.length, 3, 'the first try and two retries')
  })

  it('does not retry a refused update, and writes the next one under a new client id', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const recorder = recordingFetch()
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET, fetch: recorder.fetch })
    const room = uniqueRoom('refused')
    await api.mutate(room, (doc) => doc.getArray('log').push(['first']))
    await assert.rejects(
      api.mutate(room, (doc) => doc.getMap('symphony:authors').set('1', 'me')),
      (error: unknown) =>
        error instanceof SymphonyApiError && error.status === 400 && error.code === 'UPDATE_INVALID',
    )
    assert.equal(recorder.posts.length, 2, 'a 400 is not tried again')
    await api.mutate(room, (doc) => doc.getArray('log').push(['third']))
    const [first, , third] = recorder.posts.map((post) => [...written(post).clients][0])
    assert.notEqual(third, first, 'after a write that did not land, a new client id')
    assert.deepEqual(await api.getDocument(room), { log: ['first', 'third'] })
  })

  it('with auth on, its client id is bound to symphony:api and never one of a user’s', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET, auth: { mode: 'jwt', secret: TEST_SECRET } })
    const api = createRoomsApi({ url: t.httpUrl, secret: API_SECRET })
    const room = uniqueRoom('bound')
    const token = await createToken({ room, access: 'rw', userId: 'u-1', expiresIn: 60, secret: TEST_SECRET })
    const user = connectClient(t.wsUrl, room, { token })
    await synced(user)
    user.doc.getArray('log').push(['by the user'])
    await eventually(async () => (await api.authors(room)).length === 1, 'the user’s id bound')
    for (const entry of ['one', 'two', 'three'])
      await api.mutate(room, (doc) => doc.getArray('log').push([entry]))
    const authors = await api.authors(room)
    assert.deepEqual(
      authors.map((a) => a.subject).sort(),
      ['symphony:api', 'u-1'],
      'three writes, one client id of the API’s',
    )
    assert.equal(authors.find((a) => a.subject === 'u-1')?.clientId, user.doc.clientID)
    await eventually(() => user.doc.getArray('log').length === 4, 'the user sees the writes')
  })
})
