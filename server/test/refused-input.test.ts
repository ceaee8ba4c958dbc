import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CloseCode } from '@symphony/client/wire'
import pg from 'pg'
import * as Y from 'yjs'
import { encodeUpdate } from '../src/protocol/codec.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { useTestCluster } from './helpers/cluster.js'
import { closed, openRaw, refusedStatus, terminateRawSockets } from './helpers/raw-socket.js'
import { requireTestServices, uniqueName } from './helpers/services.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

const until = (check: () => Promise<boolean>, message: string) => eventually(check, message, 15_000)

describe('refused input leaves no trace in Redis, S3, DynamoDB or Postgres', () => {
  const cluster = useTestCluster()
  let database: pg.Client
  let databaseUrl: string
  before(async () => {
    const schema = uniqueName('refused').replaceAll('-', '_')
    database = new pg.Client(requireTestServices().databaseUrl)
    await database.connect()
    await database.query(`CREATE SCHEMA ${schema}`)
    await database.query(`SET search_path TO ${schema}`)
    const url = new URL(requireTestServices().databaseUrl)
    url.searchParams.set('options', `-c search_path=${schema}`)
    databaseUrl = url.toString()
  })
  after(async () => {
    destroyClients()
    terminateRawSockets()
    await database.end()
  })

  it('refused upgrades, read-only writes, malformed, oversized and too-large updates', async () => {
    const server = await cluster.start('refuse-a', {
      AUTH: 'jwt',
      AUTH_SECRET: TEST_SECRET,
      ALLOWED_ORIGINS: 'https://app.example.com',
      DATABASE_URL: databaseUrl,
      METADATA_SAMPLE_INTERVAL_MS: '200',
      MAX_MESSAGE_BYTES: String(64 * 1024),
      MAX_DOCUMENT_BYTES: String(16 * 1024),
    })
    const refusedRoom = uniqueRoom('refused')
    const url = (room: string, token?: string) => `${server.wsUrl}/${room}${token ? `?token=${token}` : ''}`

    // Refused before the upgrade.
    const rw = await signToken({ room: refusedRoom, access: 'rw' })
    const [header, payload] = rw.split('.')
    const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`
    const tampered = `${header}.${Buffer.from(JSON.stringify({ room: '*', access: 'rw', exp: 9e9 })).toString('base64url')}.${rw.split('.')[2]}`
    const refusals: [string, number, object?][] = [
      [url(refusedRoom), 401],
      [url(refusedRoom, await signToken({ room: refusedRoom, exp: 1 })), 401],
      [url(refusedRoom, await signToken({ room: 'another-room' })), 403],
      [url(refusedRoom, unsigned), 401],
      [url(refusedRoom, tampered), 401],
      [url(refusedRoom, rw), 403, { origin: 'https://evil.example.com' }],
      [url(`${refusedRoom}%2F..`, rw), 403], // the room "<name>/..", another room
      [url(`${refusedRoom}%00`, rw), 400],
    ]
    for (const [target, status, options] of refusals) {
      assert.equal((await refusedStatus(target, options)).status, status, target)
    }

    // Let in, but what they send is refused.
    const inputRoom = uniqueRoom('input')
    const update = (fill: (doc: Y.Doc) => void) => {
      const doc = new Y.Doc()
      fill(doc)
      return encodeUpdate(Y.encodeStateAsUpdate(doc))
    }
    const cases: [string, Uint8Array, number][] = [
      ['ro', update((doc) => doc.getMap('m').set('read-only', 'writes')), -1],
      ['rw', new Uint8Array([0, 2, 0x80]), CloseCode.ProtocolError],
      ['rw', new Uint8Array([0, 2, 4, 0xff, 0xff, 0xff, 0xff]), CloseCode.ProtocolError],
      ['rw', new Uint8Array(100 * 1024).fill(0), CloseCode.MessageTooBig],
      ['rw', update((doc) => doc.getText('t').insert(0, 'z'.repeat(30 * 1024))), CloseCode.DocumentTooLarge],
    ]
    for (const [access, frame, code] of cases) {
      const socket = await openRaw(url(inputRoom, await signToken({ room: inputRoom, access })))
      const gone = closed(socket)
      socket.send(frame)
      if (code === -1) {
        // A read-only write is refused and the connection told why; it stays open.
        await until(async () => (await server.metrics()).includes('symphony_writes_denied_total 1'), 'denied')
        socket.close()
      } else {
        assert.equal((await gone).code, code)
      }
    }

    // A legitimate writer, so every check below has something it would have seen.
    const controlRoom = uniqueRoom('control')
    const writer = await connectSynced(server.wsUrl, controlRoom, {
      token: await signToken({ room: controlRoom, access: 'rw' }),
    })
    writer.doc.getMap('m').set('legit', true)
    await until(async () => (await cluster.redisKeys('*journal:*')).length > 0, 'the edit is journaled')
    writer.destroy()
    await until(async () => (await cluster.snapshot(controlRoom)) !== null, 'the control room is saved')
    const rows = (room: string) =>
      database
        .query(
          `SELECT (SELECT count(*) FROM rooms WHERE name = $1) + (SELECT count(*) FROM connection_sessions WHERE room = $1)
             + (SELECT count(*) FROM room_holders WHERE room = $1) + (SELECT count(*) FROM room_samples WHERE room = $1) AS n`,
          [room],
        )
        .then((result) => Number(result.rows[0].n))
    await until(async () => (await rows(controlRoom)) >= 2, 'the control room’s metadata is written')
    await until(
      async () => (await cluster.ownerItem(inputRoom))?.released === true,
      'the input room is unloaded',
    )

    assert.deepEqual(
      await cluster.redisKeys(`*journal:*`), // not the writers' leases (journal-writers)
      [],
      'nothing journaled (the control room is trimmed)',
    )
    assert.equal(await cluster.snapshot(refusedRoom), null)
    assert.equal(await cluster.snapshot(inputRoom), null, 'the room never changed, so it was never saved')
    assert.equal(await cluster.ownerItem(refusedRoom), null, 'never owned')
    assert.equal(await rows(refusedRoom), 0, 'no metadata for a refused upgrade')
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status, 200)
  })
})
