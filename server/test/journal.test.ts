import assert from 'node:assert/strict'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, it } from 'node:test'
import { FileUpdateJournal } from '../src/adapters/file-update-journal.js'
import { cleanUpAfterTest } from './helpers/cleanup.js'
import { connectSynced, eventually, uniqueRoom } from './helpers/clients.js'
import { metricValue } from './helpers/cluster.js'
import { type ServerProcess, startServerProcess } from './helpers/server-process.js'
import { startTestServer } from './helpers/test-server.js'

afterEach(cleanUpAfterTest)

const EDITS = 40

/** The embedded server as `npm start` runs it, on a data folder of the test's own. */
function startEmbedded(data: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  return startServerProcess({
    AUTH: 'none',
    DATABASE_URL: 'none',
    SNAPSHOTS: `file://${join(data, 'snapshots')}`,
    JOURNAL: `file://${join(data, 'journal')}`,
    // Neither a periodic nor a last-leave snapshot comes before the kill: only the journal can help.
    SNAPSHOT_INTERVAL_MS: '3600000',
    ROOM_GRACE_MS: '3600000',
    ...env,
  })
}

const metricsOf = async (server: ServerProcess) =>
  (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text()

describe('update journal', () => {
  it('a server killed with SIGKILL after every client left loses no update it had applied', async () => {
    const data = mkdtempSync(join(tmpdir(), 'symphony-journal-'))
    const room = uniqueRoom('crash')
    const first = await startEmbedded(data)
    const wsUrl = `ws://127.0.0.1:${first.port}`
    const [writer, witness] = await Promise.all([connectSynced(wsUrl, room), connectSynced(wsUrl, room)])
    for (let i = 0; i < EDITS; i++) writer.doc.getArray<number>('edits').push([i])
    witness.doc.getMap('m').set('witness', 'here too')
    // Seen by the other client means the server applied (and, first, journaled) it.
    await eventually(() => witness.doc.getArray('edits').length === EDITS, 'the witness has every edit')
    await eventually(() => writer.doc.getMap('m').has('witness'), 'the writer has the witness edit')
    writer.destroy()
    witness.destroy()
    first.child.kill('SIGKILL')
    await first.exited
    assert.equal(existsSync(join(data, 'snapshots', `${room}.ybin`)), false, 'no snapshot was saved')

    const second = await startEmbedded(data, { ROOM_GRACE_MS: '100' })
    try {
      const reader = await connectSynced(`ws://127.0.0.1:${second.port}`, room)
      assert.deepEqual(
        reader.doc.getArray('edits').toArray(),
        Array.from({ length: EDITS }, (_, i) => i),
      )
      assert.equal(reader.doc.getMap('m').get('witness'), 'here too')
      assert.equal(metricValue(await metricsOf(second), 'symphony_journal_replayed_updates_total'), EDITS + 1)
      reader.destroy()
      // The last leave saves a snapshot, which holds everything: the journal is trimmed empty.
      await eventually(() => existsSync(join(data, 'snapshots', `${room}.ybin`)), 'the snapshot is saved')
      const journal = new FileUpdateJournal(join(data, 'journal'))
      await eventually(async () => (await journal.read(room)).updates.length === 0, 'the journal is trimmed')
    } finally {
      second.child.kill('SIGKILL')
    }
  })

  it('trims after each snapshot only what the snapshot holds, and replays nothing twice', async () => {
    const t = await startTestServer()
    const journal = new FileUpdateJournal(join(t.snapshotFolder, 'journal'))
    const room = uniqueRoom('trim')
    const client = await connectSynced(t.wsUrl, room)
    const text = client.doc.getText('t')
    text.insert(0, 'one ')
    await eventually(async () => (await journal.read(room)).updates.length === 1, 'journaled')
    assert.deepEqual(await t.server.manager.flushAll(Date.now() + 5_000), [])
    assert.equal((await journal.read(room)).updates.length, 0, 'saved, so trimmed')
    text.insert(4, 'two')
    await eventually(
      async () => (await journal.read(room)).updates.length === 1,
      'the next edit is journaled',
    )
    const state = await t.snapshots.load(room)
    assert.ok(state, 'the first snapshot')
    client.destroy()
    await eventually(async () => (await journal.read(room)).updates.length === 0, 'trimmed on the last leave')
    const reader = await connectSynced(t.wsUrl, room)
    assert.equal(reader.doc.getText('t').toString(), 'one two')
    assert.equal(
      metricValue(await t.server.metrics.registry.metrics(), 'symphony_journal_replayed_updates_total'),
      0,
    )
  })
})
