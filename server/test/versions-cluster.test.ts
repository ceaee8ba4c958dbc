import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { internalAuthorization, internalVersionPath } from '@symphony/client/wire'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { type ClusterServer, useTestCluster } from './helpers/cluster.js'
import { type RestApi, type Version, versionHolding, versionsApi } from './helpers/versions.js'

const API_SECRET = 'api-secret-for-tests-0123456789abcdef'

/** A cluster server's REST API. */
const rest = (server: ClusterServer): RestApi => ({ httpUrl: server.httpUrl, apiSecret: API_SECRET })

/** Version history on S3 object versions (moto), restored through real server processes. */
describe('versions and restore in a real local cluster (S3 object versions)', () => {
  const cluster = useTestCluster()
  afterEach(destroyClients)

  it('a restore through a third server reaches the clients of two others, and is saved as a version', async () => {
    const env = { API_SECRET, SNAPSHOT_INTERVAL_MS: '200' }
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
    let first: string | null = null
    await eventually(
      async () => {
        first = await versionHolding(rest(c), room, { text: 'the first draft' })
        return first !== null
      },
      'the first draft is a saved version in S3',
      15_000,
    )
    await eventually(() => textOf(onB) === 'the first draft', 'B has it', 10_000)
    onB.doc.getText('text').delete(0, 4)
    onB.doc.getMap('meta').set('status', 'edited')
    await eventually(() => textOf(onA) === 'first draft', 'A has the edit', 10_000)
    await eventually(
      async () =>
        (await versionHolding(rest(c), room, { text: 'first draft', meta: { status: 'edited' } })) !== null,
      'the edit is saved too',
      15_000,
    )

    const restored = await versionsApi(rest(c), room, `/${first}/restore`, 'POST')
    assert.equal(restored.status, 200, JSON.stringify(restored.body))
    for (const client of [onA, onB]) {
      await eventually(() => textOf(client) === 'the first draft', 'both clients see the restore', 10_000)
      await eventually(() => client.doc.getMap('meta').size === 0, 'the map entry is gone', 10_000)
    }
    const { body } = await versionsApi(rest(a), room, '?limit=1')
    const [newest] = body.versions as Version[]
    assert.equal(
      newest?.id,
      (restored.body as { version: string }).version,
      'the restore is the newest version',
    )
    const { body: newestDocument } = await versionsApi(rest(b), room, `/${newest?.id}/document`)
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
})
