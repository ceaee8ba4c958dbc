import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import * as Y from 'yjs'
import type { DatabaseConnection } from '../src/adapters/postgres/connect.js'
import { PgMetadataSink } from '../src/adapters/postgres/pg-metadata-sink.js'
import {
  MAX_CONCURRENT_LISTINGS,
  PgRoomCatalog,
  prefixEnd,
} from '../src/adapters/postgres/pg-room-catalog.js'
import { ServerBusyError } from '../src/errors.js'
import { silentLogger } from '../src/logger.js'
import { cursorAfter } from '../src/transport/room-list-route.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { deferred } from './helpers/deferred.js'
import { METADATA_BACKENDS, testMetadataSink } from './helpers/test-database.js'
import { startTestServer, stopTestServers, type TestServer } from './helpers/test-server.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

interface Listed {
  rooms: { name: string; bytes: number; connections: number; updatedAt: string | null }[]
  nextCursor: string | null
}

/** `GET /api/v1/rooms` with `query`, answered as the status and the JSON body. */
async function list(t: TestServer, query: Record<string, string> | string = {}, init: RequestInit = {}) {
  const search = typeof query === 'string' ? query : new URLSearchParams(query).toString()
  const response = await fetch(`${t.httpUrl}/api/v1/rooms${search && `?${search}`}`, {
    ...init,
    headers: { authorization: `Bearer ${API_SECRET}`, ...(init.headers as Record<string, string>) },
  })
  return {
    status: response.status,
    body: (await response.json()) as Listed & { error?: { code: string; message: string } },
  }
}

/** Every page of a listing, following `nextCursor`; `between` runs after each page. */
async function allPages(t: TestServer, query: Record<string, string>, between?: () => Promise<void>) {
  const names: string[] = []
  let cursor: string | null = null
  do {
    const { status, body }: { status: number; body: Listed } = await list(t, {
      ...query,
      ...(cursor === null ? {} : { cursor }),
    })
    assert.equal(status, 200)
    names.push(...body.rooms.map((room) => room.name))
    cursor = body.nextCursor
    await between?.()
  } while (cursor !== null)
  return names
}

/** Sorted by code point, as the listing (and UTF-8 bytes) order names; JS's `<` compares UTF-16 units. */
function byCodePoint(names: string[]): string[] {
  const key = (name: string) => [...name].map((c) => c.codePointAt(0) as number)
  return [...names].sort((a, b) => {
    const [x, y] = [key(a), key(b)]
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number)
    }
    return x.length - y.length
  })
}

for (const backend of METADATA_BACKENDS) {
  describe(`GET /api/v1/rooms on ${backend.name}`, () => {
    let db: DatabaseConnection & { cleanup(): void }
    /** The collation the test gave room names, when the database has one that does not sort by code point. */
    let collation: string | undefined
    before(async () => {
      db = await backend.open()
      // A database's own collation (RDS: en_US.UTF-8) sorts 'b' before 'B' and ignores some
      // characters: the listing must page in code point order all the same.
      const { rows } = await db.pool.query<{ collname: string }>(
        `SELECT collname FROM pg_collation WHERE collname IN ('und-x-icu', 'en_US.utf8', 'en_US') ORDER BY collname DESC LIMIT 1`,
      )
      collation = rows[0]?.collname
      await testMetadataSink(uniqueRoom('migrating'), db.pool).close()
      if (collation)
        await db.pool.query(`ALTER TABLE rooms ALTER COLUMN name TYPE text COLLATE "${collation}"`)
    })
    after(async () => {
      await db.close()
      db.cleanup()
    })
    afterEach(async () => {
      destroyClients()
      await stopTestServers()
    })

    /** A server recording its metadata in this test's database, with the REST API on. */
    async function serverWithMetadata(overrides: Parameters<typeof startTestServer>[0] = {}) {
      const serverId = uniqueRoom('server')
      const sink = testMetadataSink(serverId, db.pool)
      await sink.flush() // migrated, so tests may write rows of their own
      return startTestServer({
        serverId,
        apiSecret: API_SECRET,
        adapters: { metadata: sink },
        metadataSampleIntervalMs: 50,
        ...overrides,
      })
    }

    /** Rooms as the metadata store holds them, written directly (faster than loading each). */
    async function insertRooms(names: string[]) {
      await db.pool.query(
        'INSERT INTO rooms (name, bytes, last_active_at) SELECT unnest($1::text[]), 1, now() ON CONFLICT DO NOTHING',
        [names],
      )
    }

    it('lists rooms with their size, live connections and last change, in the contract’s shape', async () => {
      const t = await serverWithMetadata()
      const prefix = uniqueRoom('list')
      const [edited, watched, posted] = [`${prefix}/edited`, `${prefix}/watched`, `${prefix}/posted`]
      const before = Date.now()
      const a = await connectSynced(t.wsUrl, encodeURIComponent(edited))
      await connectSynced(t.wsUrl, encodeURIComponent(edited))
      await connectSynced(t.wsUrl, encodeURIComponent(watched))
      a.doc.getText('t').insert(0, 'hello')
      const written = new Y.Doc()
      written.getMap('m').set('by', 'backend')
      const response = await fetch(`${t.httpUrl}/api/v1/rooms/${encodeURIComponent(posted)}/update`, {
        method: 'POST',
        body: new Blob([Y.encodeStateAsUpdate(written) as Uint8Array<ArrayBuffer>]),
        headers: { authorization: `Bearer ${API_SECRET}`, 'content-type': 'application/octet-stream' },
      })
      assert.equal(response.status, 204)

      const page = async () => (await list(t, { prefix })).body
      await eventually(async () => {
        const rooms = (await page()).rooms
        return rooms.length === 3 && rooms.every((room) => room.name === watched || room.updatedAt !== null)
      }, 'the three rooms listed, the two written with their change')
      const { rooms, nextCursor } = await page()
      assert.equal(nextCursor, null)
      assert.deepEqual(
        rooms.map((room) => room.name),
        [edited, posted, watched],
      )
      const [e, p, w] = rooms as [Listed['rooms'][0], Listed['rooms'][0], Listed['rooms'][0]]
      assert.deepEqual(Object.keys(e).sort(), ['bytes', 'connections', 'name', 'updatedAt'])
      assert.equal(e.connections, 2)
      assert.equal(w.connections, 1)
      assert.equal(p.connections, 0, 'a REST write is no connection')
      assert.ok(e.bytes > 0 && p.bytes > 0, 'written rooms have a size')
      assert.equal(w.updatedAt, null, 'a room only opened never changed')
      for (const changed of [e, p]) {
        const at = Date.parse(changed.updatedAt as string)
        assert.ok(at >= before - 1000 && at <= Date.now(), `${changed.name}: ${changed.updatedAt}`)
      }

      destroyClients()
      await eventually(
        async () => (await page()).rooms.every((room) => room.connections === 0),
        'no connections once the clients leave',
      )
      assert.equal((await page()).rooms[0]?.updatedAt, e.updatedAt, 'leaving is no change')
    })

    it('pages in code point order, and rooms created or deleted meanwhile neither repeat nor hide the others', async () => {
      const t = await serverWithMetadata()
      const prefix = `${uniqueRoom('paging')}/`
      // UTF-16 order differs from code point order past U+FFFF: '😀' < '\uFFFF' in JS's `<`.
      const first = ['a', 'B', 'b', 'é', '\uFFFF', '😀', 'z z', '%2F', 'a/b', '日本'].map((n) => prefix + n)
      await insertRooms(first)
      assert.deepEqual(
        await allPages(t, { prefix, limit: '100' }),
        byCodePoint(first),
        `collation ${collation}`,
      )

      const deleted = byCodePoint(first)[6] as string
      const added: string[] = []
      let pages = 0
      const seen = await allPages(t, { prefix, limit: '2' }, async () => {
        pages++
        if (pages !== 2) return
        // After the second page (4 names seen): one room before the cursor, one after, one gone.
        const early = `${prefix}A`
        const late = `${prefix}zz`
        added.push(late)
        await insertRooms([early, late])
        await db.pool.query('DELETE FROM rooms WHERE name = $1', [deleted])
      })
      assert.deepEqual(seen, byCodePoint([...first.filter((n) => n !== deleted), ...added]))
      assert.equal(new Set(seen).size, seen.length, 'no room twice')
    })

    it('matches a prefix exactly, up to the last code point', async () => {
      const t = await serverWithMetadata()
      const base = uniqueRoom('prefix')
      const top = '\u{10FFFF}'
      const names = [
        base,
        `${base}x`,
        `${base}${top}`,
        `${base}${top}x`,
        `${base.slice(0, -1)}${String.fromCodePoint((base.codePointAt(base.length - 1) as number) + 1)}`,
        `${base}\uD7FF`,
        `${base}\uE000`,
      ]
      await insertRooms(names)
      for (const prefix of [base, `${base}x`, `${base}${top}`, `${base}\uD7FF`]) {
        const expected = byCodePoint(names.filter((name) => name.startsWith(prefix)))
        assert.deepEqual(await allPages(t, { prefix, limit: '1' }), expected, JSON.stringify(prefix))
      }
      assert.equal(prefixEnd(`a${top}${top}`), 'b')
      assert.equal(prefixEnd(`${top}`), null)
      assert.equal(prefixEnd('\uD7FF'), '\uE000', 'past the surrogates')
    })

    it(`answers 100 rooms without a limit, and refuses a limit past API_MAX_LIST_LIMIT with 400`, async () => {
      const t = await serverWithMetadata()
      const prefix = `${uniqueRoom('limit')}/`
      await insertRooms(Array.from({ length: 120 }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`))
      const unbounded = await list(t, { prefix })
      assert.equal(unbounded.body.rooms.length, 100)
      assert.ok(unbounded.body.nextCursor)
      assert.equal((await list(t, { prefix, limit: '1000' })).body.rooms.length, 120)
      const over = await list(t, { prefix, limit: '1001' })
      assert.equal(over.status, 400)
      assert.equal(over.body.error?.code, 'LIMIT_INVALID')

      const small = await serverWithMetadata({ apiMaxListLimit: 5 })
      assert.equal((await list(small, { prefix, limit: '5' })).body.rooms.length, 5)
      assert.equal((await list(small, { prefix })).body.rooms.length, 5, 'the default is capped too')
      const past = await list(small, { prefix, limit: '6' })
      assert.equal(past.status, 400)
      assert.deepEqual(past.body, {
        error: { code: 'LIMIT_INVALID', message: 'limit must be a whole number from 1 to 5' },
      })
    })

    it('refuses a bad prefix, limit or cursor with a clear 400, another method with 405, no secret with 401', async () => {
      const t = await serverWithMetadata()
      const refusals: [string, string][] = [
        ['prefix=%00', 'PREFIX_INVALID'],
        ['prefix=a%0Ab', 'PREFIX_INVALID'],
        [`prefix=${'x'.repeat(129)}`, 'PREFIX_INVALID'],
        ['prefix=a&prefix=b', 'PREFIX_INVALID'],
        ['limit=0', 'LIMIT_INVALID'],
        ['limit=-1', 'LIMIT_INVALID'],
        ['limit=1.5', 'LIMIT_INVALID'],
        ['limit=1e2', 'LIMIT_INVALID'],
        ['limit=', 'LIMIT_INVALID'],
        ['limit=ten', 'LIMIT_INVALID'],
        ['limit=99999999999999999999', 'LIMIT_INVALID'],
        ['limit=1&limit=2', 'LIMIT_INVALID'],
        ['cursor=', 'CURSOR_INVALID'],
        ['cursor=not%20base64', 'CURSOR_INVALID'],
        ['cursor=YWJj%3D', 'CURSOR_INVALID'], // padded: not what the server gives
        ['cursor=_w', 'CURSOR_INVALID'], // the byte FF: not UTF-8
        [`cursor=${cursorAfter('a\u0000b')}`, 'CURSOR_INVALID'],
        [`cursor=${'A'.repeat(684)}`, 'CURSOR_INVALID'],
      ]
      for (const [query, code] of refusals) {
        const { status, body } = await list(t, query)
        assert.equal(status, 400, query)
        assert.equal(body.error?.code, code, query)
      }
      const posted = await list(t, {}, { method: 'POST' })
      assert.equal(posted.status, 405)
      const response = await fetch(`${t.httpUrl}/api/v1/rooms`)
      assert.equal(response.status, 401)
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED')
      // A name that is a valid cursor, with characters of every width, pages on from it.
      const prefix = `${uniqueRoom('cursor')}/`
      await insertRooms([`${prefix}é`, `${prefix}😀`])
      const after = await list(t, { prefix, cursor: cursorAfter(`${prefix}é`) })
      assert.deepEqual(
        after.body.rooms.map((room) => room.name),
        [`${prefix}😀`],
      )
    })
  })
}

describe('GET /api/v1/rooms without a metadata database', () => {
  afterEach(() => stopTestServers())

  it('answers 501 METADATA_OFF with DATABASE_URL=none', async () => {
    const t = await startTestServer({ apiSecret: API_SECRET })
    const { status, body } = await list(t)
    assert.equal(status, 501)
    assert.equal(body.error?.code, 'METADATA_OFF')
    assert.match(body.error?.message ?? '', /DATABASE_URL=none/)
  })

  it('answers 503 METADATA_UNAVAILABLE while the database does not answer', async () => {
    const sink = new PgMetadataSink({
      serverId: uniqueRoom('server'),
      address: '127.0.0.1:0',
      connect: async () => {
        throw new Error('connection refused')
      },
      logger: silentLogger,
    })
    const t = await startTestServer({ apiSecret: API_SECRET, adapters: { metadata: sink } })
    const { status, body } = await list(t)
    assert.equal(status, 503)
    assert.equal(body.error?.code, 'METADATA_UNAVAILABLE')
  })
})

describe('PgRoomCatalog', () => {
  it(`runs at most ${MAX_CONCURRENT_LISTINGS} listings at once and refuses more (the writes share its pool)`, async () => {
    const database = deferred<never>()
    const catalog = new PgRoomCatalog(() => database.promise)
    const query = { prefix: '', after: null, limit: 1 }
    const running = Array.from({ length: MAX_CONCURRENT_LISTINGS }, () => catalog.list(query))
    await assert.rejects(catalog.list(query), ServerBusyError)
    database.reject(new Error('gone'))
    for (const listing of running) await assert.rejects(listing, /gone/)
    await assert.rejects(catalog.list(query), /gone/, 'a place is free again once they end')
  })
})
