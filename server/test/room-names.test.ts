import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { destroyNodeClients, nodeClient, recordErrors } from '@symphony/test-helpers/node-client'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectClient, connectSynced, eventually } from './helpers/clients.js'
import { startTestCluster, startTestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

afterEach(async () => {
  await destroyNodeClients()
  await cleanUpAfterTest()
})

let counter = 0
/** A fresh room name of the kind apps use: slashes, spaces, accents, emoji. */
const appName = (base: string) => `${base} ${++counter}`

describe('room names as apps use them', () => {
  for (const base of [
    'team/doc-42',
    'my doc',
    'café-ü',
    'my doc/café-ü',
    'Ünïcødé/😀 board',
    'a:b*c?[d]{e}',
  ]) {
    it(`${JSON.stringify(base)}: a y-websocket provider (raw name in the URL) and our client share one room`, async () => {
      const t = await startTestServer()
      const room = appName(base)
      const ours = nodeClient(t.wsUrl).enter(room)
      await ours.whenSynced()
      ours.map('m').set('from', 'ours')
      // Names with `?` or `#` only survive the URL encoded: the raw provider is for the others.
      if (!/[?#%]/.test(room)) {
        const raw = await connectSynced(t.wsUrl, room)
        await eventually(() => raw.doc.getMap('m').get('from') === 'ours', 'the provider sees our edit')
        raw.doc.getMap('m').set('back', 'raw')
        await eventually(() => ours.map('m').get('back') === 'raw', 'our client sees the provider’s edit')
      }
      assert.ok(t.server.manager.loadedRoom(room), 'the room is the decoded name')
      assert.equal(t.server.manager.roomCount, 1, 'one room, however the name travelled')
    })
  }

  it('names that differ only in case, or by an encoded slash, are different rooms', async () => {
    const t = await startTestServer()
    const names = ['Doc', 'doc', 'a%2Fb', 'a/b', '100%', '%41', 'A']
    const rooms = names.map((name) => nodeClient(t.wsUrl).enter(name))
    await Promise.all(rooms.map((room) => room.whenSynced()))
    for (const [i, room] of rooms.entries()) room.map('m').set('i', i)
    const fresh = names.map((name) => nodeClient(t.wsUrl).enter(name))
    await Promise.all(fresh.map((room) => room.whenSynced()))
    await eventually(() => fresh.every((room, i) => room.map('m').get('i') === i), 'each room has its own')
    assert.equal(t.server.manager.roomCount, names.length)
  })

  it('raw paths: /a/b and /a%2Fb are the room a/b, /100% is the room 100%', async () => {
    const t = await startTestServer()
    const ours = nodeClient(t.wsUrl).enter('a/b')
    await ours.whenSynced()
    ours.map('m').set('from', 'ours')
    for (const raw of ['a/b', 'a%2Fb', 'a%2fb']) {
      const client = await connectSynced(t.wsUrl, raw)
      await eventually(() => client.doc.getMap('m').get('from') === 'ours', `${raw} is a/b`)
    }
    await connectSynced(t.wsUrl, '100%')
    assert.ok(t.server.manager.loadedRoom('100%'))
    assert.equal(t.server.manager.roomCount, 2)
  })

  it('grants prefix patterns on the decoded name: team/* opens team/doc-42, raw or encoded, not other/x', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const token = await signToken({ room: 'team/*', access: 'rw' })
    const ours = nodeClient(t.wsUrl, { token }).enter('team/doc-42')
    await ours.whenSynced()
    const raw = await connectSynced(t.wsUrl, 'team/doc-42', { token })
    ours.text('t').insert(0, 'hi')
    await eventually(() => raw.doc.getText('t').toString() === 'hi', 'both in team/doc-42')
    const other = nodeClient(t.wsUrl, { token }).enter('other/x')
    const errors = recordErrors(other)
    await eventually(() => errors.length > 0, 'refused')
    assert.equal(errors[0]?.code, 'AUTH_REFUSED')
    assert.equal(errors[0]?.details.status, 403)
    // Not fooled by an encoded slash: "team%2F..%2Fother" is the name "team/../other", under team/.
    const sneaky = connectClient(t.wsUrl, 'team%2F..%2Fother', { token })
    await eventually(() => sneaky.provider.synced, 'an odd but granted name')
    assert.ok(t.server.manager.loadedRoom('team/../other'))
    assert.equal(t.server.manager.loadedRoom('other'), undefined)
  })

  it('a client of such a room on another server is relayed to the server that owns it', async () => {
    const [a, b] = await startTestCluster()
    const room = appName('team/Straße 😀 %41')
    const writer = nodeClient(a.wsUrl).enter(room)
    await writer.whenSynced()
    writer.text('t').insert(0, 'only in memory')
    await eventually(() => a.server.manager.loadedRoom(room)?.doc.getText('t').length === 14, 'A applied it')
    const reader = nodeClient(b.wsUrl).enter(room)
    await reader.whenSynced()
    assert.equal(reader.text('t').toString(), 'only in memory')
    assert.equal(b.server.manager.loadedRoom(room), undefined, 'B relays the room, holding no copy')
    reader.text('t').insert(0, 'and relayed ')
    await eventually(() => writer.text('t').toString() === 'and relayed only in memory', 'back to A')
  })
})
