import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchChromium } from './helpers/browser.js'
import { eventually, uniqueRoom } from './helpers/clients.js'
import { CLUSTER_API_SECRET, type ClusterServer, clusterRest, useTestCluster } from './helpers/cluster.js'
import { savedVersionHolding, type Version, versionHolding, versionsApi } from './helpers/versions.js'
import { addShape, boardDocument, boardOf, drag, openWhiteboard, waitForBoard } from './helpers/whiteboard.js'

/**
 * Issue 36's "done when" on the cluster: three built server processes on real Redis and S3 object
 * versions (moto), the demo whiteboard each serves open in Chromium on two of them, a restore
 * through the REST API of the third.
 */
describe('restore in a real local cluster, seen by whiteboards in Chromium', () => {
  const cluster = useTestCluster()
  let browser: Browser
  let servers: ClusterServer[]
  before(async () => {
    const launched = launchChromium() // while the servers start
    const env = { API_SECRET: CLUSTER_API_SECRET, SNAPSHOT_INTERVAL_MS: '200' } // versions to restore come quickly
    servers = await Promise.all(['wb-a', 'wb-b', 'wb-c'].map((name) => cluster.start(name, env)))
    browser = await launched
  })
  after(async () => {
    await browser?.close()
  })

  it('tabs on two servers draw, a third server restores a saved version: both tabs show exactly it', async () => {
    const [a, b, c] = servers as [ClusterServer, ClusterServer, ClusterServer]
    const room = uniqueRoom('board/versions')
    const [onA, onB] = [
      await openWhiteboard(browser, a.httpUrl, room),
      await openWhiteboard(browser, b.httpUrl, room),
    ]

    // The board to go back to: one rectangle drawn on A, seen on B, saved in S3.
    await addShape(onA, 'rect', [200, 150])
    const saved = await boardOf(onA)
    await waitForBoard(onB, saved)
    const savedDocument = await boardDocument(onA)
    const first = await savedVersionHolding(clusterRest(c), room, savedDocument, {
      message: 'the one-rectangle board is a saved version, listed by the REST API',
      timeoutMs: 15_000,
    })

    // Then B moves the rectangle and A adds an ellipse; that board is saved too.
    await drag(onB, [200, 150], [450, 350])
    await addShape(onA, 'ellipse', [700, 200])
    const changed = await boardOf(onA)
    await waitForBoard(onB, changed)
    assert.notDeepEqual(changed, saved)
    const changedDocument = await boardDocument(onB)
    await eventually(
      async () => (await versionHolding(clusterRest(c), room, changedDocument)) !== null,
      'the changed board is a saved version too',
      15_000,
    )

    const restored = await versionsApi(clusterRest(c), room, `/${first}/restore`, 'POST')
    assert.equal(restored.status, 200, JSON.stringify(restored.body))
    await Promise.all([waitForBoard(onA, saved), waitForBoard(onB, saved)])
    assert.deepEqual(await boardDocument(onB), savedDocument)

    // The restore is the newest version, of its own, holding the restored board.
    const { restored: from, version } = restored.body as { restored: string; version: string }
    assert.equal(from, first)
    const { body } = await versionsApi(clusterRest(a), room, '?limit=1')
    const [newest] = body.versions as Version[]
    assert.equal(newest?.id, version, 'the restore is listed as the newest version')
    assert.notEqual(version, first)
    assert.deepEqual((await versionsApi(clusterRest(b), room, `/${version}/document`)).body, savedDocument)
    await Promise.all([onA.context().close(), onB.context().close()])
  })
})
