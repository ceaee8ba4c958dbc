import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { arrayOfObjectsUpdate } from '../../loadtest/src/bench/json-values.js'
import { BUILT_BYTES_BURST, BUILT_BYTES_PER_SECOND } from '../src/core/pacing.js'
import { encodeUpdate } from '../src/protocol/codec.js'
import { contentCostOf } from '../src/protocol/update-scan.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { openRaw } from './helpers/raw-socket.js'
import { startTestServer } from './helpers/test-server.js'
import { signToken, TEST_SECRET } from './helpers/tokens.js'

afterEach(cleanUpAfterTest)

describe("a writer's pace", () => {
  it('paces a writer whose small updates build megabytes each: all applied, at its pace, while another user’s edit lands at once', async () => {
    const t = await startTestServer({ auth: { mode: 'jwt', secret: TEST_SECRET } })
    const room = uniqueRoom('paced')
    const url = async (sub: string) =>
      `${t.wsUrl}/${room}?token=${await signToken({ room, access: 'rw', sub })}`
    // 200 KB each on the wire, each building megabytes of `{}`: twice the burst in all.
    const updates = Array.from({ length: 8 }, (_, clock) =>
      arrayOfObjectsUpdate({ elements: 100_000, key: `k${clock}`, client: 77, clock }),
    )
    const built = updates.reduce((sum, update) => sum + contentCostOf(update).builtBytes, 0)
    assert.ok(built > 2 * BUILT_BYTES_BURST, `${built} bytes built in all`)
    const heavy = await openRaw(await url('heavy'))
    const started = performance.now()
    for (const update of updates) heavy.send(encodeUpdate(update))
    const map = () => t.server.manager.loadedRoom(room)?.doc.getMap('map')
    await eventually(() => (map()?.size ?? 0) > 0, 'the first applied at once')
    const light = await connectSynced(t.wsUrl, room, {
      token: await signToken({ room, access: 'rw', sub: 'light' }),
    })
    light.doc.getMap('map').set('light', 1)
    await eventually(() => map()?.get('light') === 1, 'the other user’s edit lands')
    assert.ok(
      (map()?.size ?? 0) < updates.length + 1,
      `${map()?.size} entries: the heavy writer is still paced`,
    )
    await eventually(() => map()?.size === updates.length + 1, 'every update applied in the end', 20_000)
    // What it built past the burst is paid at the pace (a lower bound: a slower machine only adds).
    const paced = ((built - BUILT_BYTES_BURST) / BUILT_BYTES_PER_SECOND) * 1000
    const took = performance.now() - started
    assert.ok(took >= 0.8 * paced, `took ${took.toFixed(0)} ms, at least ${paced.toFixed(0)} ms paced`)
  })
})
