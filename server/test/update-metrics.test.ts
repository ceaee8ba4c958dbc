import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { afterEach, describe, it } from 'node:test'
import { ALARM_METRICS, REGISTRY_ERROR_ACTIONS } from '../src/metric-names.js'
import { connectSynced, destroyClients, eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue } from './helpers/cluster.js'
import { closed, openRaw, terminateRawSockets } from './helpers/raw-socket.js'
import { startTestCluster, startTestServer, stopTestServers, type TestServer } from './helpers/test-server.js'

const metricsOf = async (t: TestServer) => (await fetch(`${t.httpUrl}/metrics`)).text()
const handled = (text: string) => metricValue(text, 'symphony_update_handling_seconds_count')
const byType = (text: string, type: string) =>
  metricValue(text, `symphony_messages_received_by_type_total{type="${type}"}`)

describe('operational metrics of a real server', () => {
  afterEach(async () => {
    destroyClients()
    terminateRawSockets()
    await stopTestServers()
  })

  it('exports every metric the alarms use, and what build it is', async () => {
    const t = await startTestServer({ build: { version: '9.8.7', commit: 'abc123' } })
    const text = await metricsOf(t)
    for (const name of Object.values(ALARM_METRICS)) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exported`)
    }
    for (const action of REGISTRY_ERROR_ACTIONS) {
      assert.match(text, new RegExp(`^symphony_registry_errors_total\\{action="${action}"\\} 0$`, 'm'))
    }
    assert.equal(
      metricValue(text, `symphony_build_info{version="9.8.7",node="${process.version}",commit="abc123"}`),
      1,
    )
  })

  it('build info defaults to the package version and an unknown commit', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
    const text = await metricsOf(await startTestServer())
    const sample = `symphony_build_info{version="${version}",node="${process.version}",commit="unknown"}`
    assert.equal(metricValue(text, sample), 1)
  })

  it("times each update from a client's frame to the other sockets, and counts frames by type", async () => {
    const t = await startTestServer()
    const room = uniqueRoom('timed')
    const writer = await connectSynced(t.wsUrl, room)
    const reader = await connectSynced(t.wsUrl, room)
    const before = await metricsOf(t)
    const started = performance.now()
    for (let i = 0; i < 20; i++) writer.doc.getText('t').insert(0, 'x')
    await eventually(() => reader.doc.getText('t').length === 20, 'the reader has every edit')
    const after = await metricsOf(t)
    const wholeRunSeconds = (performance.now() - started) / 1000
    assert.ok(handled(after) - handled(before) >= 20, 'every forwarded update is timed')
    const p99 = metricValue(after, 'symphony_update_handling_p99_seconds')
    // In seconds, and no update took longer than the whole run (a unit mix-up would).
    assert.ok(p99 > 0 && p99 <= wholeRunSeconds, `p99 ${p99} s of a ${wholeRunSeconds} s run`)
    const inf = metricValue(after, 'symphony_update_handling_seconds_bucket{le="+Inf"}')
    assert.equal(inf, handled(after))
    assert.ok(byType(after, 'update') - byType(before, 'update') >= 20, 'updates counted')
    assert.ok(byType(after, 'sync-step1') >= 2, "each provider's sync step 1")
    assert.ok(byType(after, 'sync-step2') >= 2, "each provider's answer")
    assert.ok(byType(after, 'awareness') >= 2, "each provider's presence")
    assert.equal(byType(after, 'unknown'), 0)
  })

  it('counts a frame that is no message as unknown, whatever its bytes', async () => {
    const t = await startTestServer()
    const socket = await openRaw(`${t.wsUrl}/${uniqueRoom('junk')}`)
    const closing = closed(socket)
    socket.send(Buffer.from([0xee, 0x01, 0x02]))
    await closing
    const text = await metricsOf(t)
    assert.equal(byType(text, 'unknown'), 1)
    const types = [...text.matchAll(/^symphony_messages_received_by_type_total\{type="([^"]*)"\}/gm)]
    const known = ['sync-step1', 'sync-step2', 'update', 'awareness', 'query-awareness', 'auth']
    known.push('sync-status', 'broadcast', 'app', 'unknown')
    assert.deepEqual(types.map((match) => match[1]).sort(), known.sort(), 'only the fixed set of labels')
  })

  it('times the updates of clients relayed from another server on the room’s owner', async () => {
    const [a, b] = await startTestCluster()
    const room = uniqueRoom('relayed')
    const onA = await connectSynced(a.wsUrl, room)
    const onB = await connectSynced(b.wsUrl, room)
    const before = handled(await metricsOf(a))
    onB.doc.getText('t').insert(0, 'from B')
    await eventually(() => onA.doc.getText('t').toString() === 'from B', 'A has the edit')
    assert.ok(handled(await metricsOf(a)) > before, 'A, the owner, timed the update relayed to it')
  })

  it('reports journaled updates no snapshot holds yet, and none once the room is saved', async () => {
    const t = await startTestServer() // snapshots every 30 s: none happens by itself here
    const room = uniqueRoom('backlog')
    const writer = await connectSynced(t.wsUrl, room)
    const backlog = async () => metricValue(await metricsOf(t), 'symphony_journal_backlog_updates')
    assert.equal(await backlog(), 0)
    for (let i = 0; i < 5; i++) writer.doc.getText('t').insert(0, 'y')
    await eventually(async () => (await backlog()) === 5, 'five updates journaled')
    await t.server.manager.save(room)
    assert.equal(await backlog(), 0)
    writer.doc.getText('t').insert(0, 'z')
    await eventually(async () => (await backlog()) === 1, 'the next update is backlog again')
  })
})
