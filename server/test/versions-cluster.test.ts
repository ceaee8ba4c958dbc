import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { internalAuthorization, internalVersionPath } from '@symphony/client/wire'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { CLUSTER_API_SECRET, clusterRest, roomApi, useTestCluster } from './helpers/cluster.js'
import { savedVersionHolding, type Version, versionHolding, versionsApi } from './helpers/versions.js'

/** Version history on S3 object versions (moto), restored through real server processes. */
describe('versions and restore in a real local cluster (S3 object versions)', () => {
  const cluster = useTestCluster()
  afterEach(destroyClients)

  it('a restore through a third server reaches the clients of two others, and is saved as a version', async () => {
    const env = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '200' }
    const [a, b, c] = [
      await cluster.start('v-a', env),
      await cluster.start('v-b', env),
      await cluster.start('v-c', env),
    ]
    assert.ok(a && b && c)
    const room = uniqueRoom('team/versions')
    const onA = await connectSynced(a.wsUrl, encodeURIComponent(room))
    const onB = await connectSynced(b.wsUrl, encodeURIComponent(room))
    const textOf = (client: typeof onA) => client.doc.getText('text').toString()

    onA.doc.getText('text').insert(0, 'the first draft')
    const first = await savedVersionHolding(
      clusterRest(c),
      room,
      { text: 'the first draft' },
      { message: 'the first draft is a saved version in S3', timeoutMs: 15_000 },
    )
    await eventually(() => textOf(onB) === 'the first draft', 'B has it', 10_000)
    onB.doc.getText('text').delete(0, 4)
    onB.doc.getMap('meta').set('status', 'edited')
    await eventually(() => textOf(onA) === 'first draft', 'A has the edit', 10_000)
    await eventually(
      async () =>
        (await versionHolding(clusterRest(c), room, { text: 'first draft', meta: { status: 'edited' } })) !==
        null,
      'the edit is saved too',
      15_000,
    )

    const restored = await versionsApi(clusterRest(c), room, `/${first}/restore`, 'POST')
    assert.equal(restored.status, 200, JSON.stringify(restored.body))
    for (const client of [onA, onB]) {
      await eventually(() => textOf(client) === 'the first draft', 'both clients see the restore', 10_000)
      await eventually(() => client.doc.getMap('meta').size === 0, 'the map entry is gone', 10_000)
    }
    const { body } = await versionsApi(clusterRest(a), room, '?limit=1')
    const [newest] = body.versions as Version[]
    assert.equal(
      newest?.id,
      (restored.body as { version: string }).version,
      'the restore is the newest version',
    )
    const { body: newestDocument } = await versionsApi(clusterRest(b), room, `/${newest?.id}/document`)
    assert.deepEqual(newestDocument, { text: 'the first draft', meta: {} })

    // The dashboard's way in: a server's internal endpoint, answering as the REST API does.
    onA.doc.getText('text').insert(0, '>> ')
    await eventually(() => textOf(onB) === '>> the first draft', 'B has it', 10_000)
    const internal = await fetch(`http://${b.internalAddress}${internalVersionPath(room, first ?? '')}`, {
      method: 'POST',
      headers: { authorization: internalAuthorization(cluster.internalToken) },
    })
    assert.equal(internal.status, 200)
    for (const client of [onA, onB]) {
      await eventually(() => textOf(client) === 'the first draft', 'restored again', 10_000)
    }
    const unknown = await fetch(`http://${b.internalAddress}${internalVersionPath(room, 'bm9uZQ')}`, {
      method: 'POST',
      headers: { authorization: internalAuthorization(cluster.internalToken) },
    })
    assert.equal(unknown.status, 404)
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'VERSION_NOT_FOUND')
  })

  it('two restores of one room through two other servers at once bring its version back once, loaded or not', async () => {
    const env = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '200' }
    const servers = await Promise.all(['r-a', 'r-b', 'r-c'].map((name) => cluster.start(name, env)))
    const [a, b, c] = servers
    assert.ok(a && b && c)
    const room = uniqueRoom('team/restore-twice')
    const client = await connectSynced(a.wsUrl, encodeURIComponent(room))
    const text = client.doc.getText('text')
    const list = client.doc.getArray<string>('list')
    text.insert(0, 'hello world')
    list.push(['x', 'y'])
    const version = { text: 'hello world', list: ['x', 'y'] }
    const saved = await savedVersionHolding(clusterRest(b), room, version, {
      message: 'the version is saved',
      timeoutMs: 15_000,
    })
    // What was deleted since is what two restores made from one state would each bring back.
    const edited = async (to: { text: string; list: string[] }) => {
      text.delete(0, text.length)
      text.insert(0, to.text)
      list.delete(0, list.length)
      list.push(to.list)
      await eventually(
        async () => (await versionHolding(clusterRest(b), room, to, 1)) !== null,
        'the edit is saved',
        15_000,
      )
    }
    const restoreTwice = async () => {
      const answers = await Promise.all(
        [b, c].map((server) => versionsApi(clusterRest(server), room, `/${saved}/restore`, 'POST')),
      )
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [200, 200],
        JSON.stringify(answers.map((answer) => answer.body)),
      )
    }

    // Loaded at a: b and c send theirs on to a, which makes one after the other.
    await edited({ text: 'world', list: ['y'] })
    await restoreTwice()
    await eventually(() => text.toString() === 'hello world', 'the client has the version', 10_000)
    assert.deepEqual(list.toJSON(), ['x', 'y'])
    assert.notEqual(await versionHolding(clusterRest(b), room, version, 1), null, 'saved exactly')

    // Loaded nowhere: b and c race to load it; the one that is not its owner sends its restore on.
    await edited({ text: 'world', list: ['y'] })
    client.destroy()
    await eventually(
      async () => (await cluster.ownerItem(room))?.released === true,
      'the room is unloaded and released',
      10_000,
    )
    await restoreTwice()
    assert.notEqual(await versionHolding(clusterRest(b), room, version, 1), null, 'saved exactly, once')
  })

  it('a restore and a deletion of one room through two other servers at once: one outcome, the room gone', async () => {
    const env = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '200' }
    const servers = await Promise.all(['d-a', 'd-b', 'd-c'].map((name) => cluster.start(name, env)))
    const [a, b, c] = servers
    assert.ok(a && b && c)
    for (const round of [1, 2, 3]) {
      const room = uniqueRoom(`team/restore-delete-${round}`)
      const client = await connectSynced(a.wsUrl, encodeURIComponent(room))
      client.doc.getText('text').insert(0, 'kept')
      const saved = await savedVersionHolding(clusterRest(b), room, { text: 'kept' })
      client.doc.getText('text').insert(4, ' and more')
      const restoring = versionsApi(clusterRest(b), room, `/${saved}/restore`, 'POST')
      const deleted = await roomApi(c, room, '', { method: 'DELETE' })
      const restored = await restoring
      assert.equal(deleted.status, 204)
      // Restored before the deletion, or refused for it with its own code; never restored after.
      const outcome = `${restored.status} ${(restored.body.error as { code?: string } | undefined)?.code ?? ''}`
      assert.ok(
        ['200 ', '410 ROOM_DELETED', '409 VERSION_NOT_RESTORABLE'].includes(outcome),
        `restore answered ${outcome}`,
      )
      const document = await roomApi(b, room, '/document')
      assert.deepEqual(
        await document.json(),
        {},
        `round ${round}: the room is gone, not restored (${outcome})`,
      )
    }
  })
})
